// tutorials/05_memory_and_syncs/lesson2_syncs.cpp: tutorial 05's lesson 2: hidden synchronizations.
//
// A loop of fused-MLP forwards and a loss (tutorial 03's GeGLU MLP, x [64, 128, 768], hidden 3072),
// three times: without a read of the loss on the host, with item() every step, with
// ts::to(loss, cpu) every step. The read waits for the GPU: the CPU stops running ahead, and the
// GPU idles while the CPU launches the next step. The lesson shows where the wait sits in the table
// (a cudaMemcpy row under ProfilerStep*, or the op ts::to with a large CPU total) and in the trace
// (a Memcpy DtoH or a Stream Sync joined to its call by a flow), and how much it costs per step.
// Checks the sync records and their correlations, and the three losses against float64; returns
// false when a check fails.
//
// Writes traces/05_memory_and_syncs/<B>x<S>x<D>x<H>_<dtype>_<cold|warm>_syncs_<none|item|to_cpu>.{json,txt}.
//
// Run: ./build/dev/tutorials/05_memory_and_syncs --lesson syncs [--warmup 5] [--batch 64] [--seq 128]
//          [--dim 768] [--hidden 3072] [--dtype bf16|f16|f32] [--device cpu|cuda]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "tutorials/05_memory_and_syncs/lessons.h"

namespace memory_and_syncs {
namespace {

namespace nn = ts::nn;

enum class Read { none, item, to_cpu };
const char* read_name(Read r) { return r == Read::none ? "none" : r == Read::item ? "item" : "to_cpu"; }

// The GPU side of the window, as the trace shows it.
struct Timeline {
  double gpu_busy_us = 0, gpu_idle_us = 0;  // between the first and the last GPU work of the window
  double launch_delay_median_us = 0, launch_delay_max_us = 0;  // a kernel's start minus its launch call's start
  int kernels = 0;
};

Timeline timeline_of(const prof::Recording& r) {
  std::map<uint64_t, int64_t> launch_start;  // correlation -> start of the call
  std::vector<const Event*> work;
  for (const Event& e : r.events) {
    if ((e.kind == EventKind::cuda_runtime || e.kind == EventKind::cuda_driver) && e.correlation != 0)
      launch_start.emplace(e.correlation, e.start_ns);
    if (e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset) work.push_back(&e);
  }
  Timeline t;
  std::sort(work.begin(), work.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  std::vector<double> delays;
  int64_t covered_to = 0;
  for (const Event* e : work) {
    if (covered_to != 0 && e->start_ns > covered_to) t.gpu_idle_us += static_cast<double>(e->start_ns - covered_to) / 1e3;
    covered_to = std::max(covered_to, e->end_ns);
    t.gpu_busy_us += static_cast<double>(e->duration_ns()) / 1e3;
    if (e->kind != EventKind::kernel) continue;
    ++t.kernels;
    if (const auto it = launch_start.find(e->correlation); it != launch_start.end())
      delays.push_back(static_cast<double>(e->start_ns - it->second) / 1e3);
  }
  if (!delays.empty()) {
    t.launch_delay_median_us = median(delays);
    t.launch_delay_max_us = *std::max_element(delays.begin(), delays.end());
  }
  return t;
}

// The checks of one read per step: the call, the copy it waits for and, for to(cpu), the sync record.
bool check_reads(const Profile& p, Read read, int active) {
  const prof::Recording& r = p.recording;
  std::map<uint64_t, const Event*> gpu_by_correlation;
  for (const Event& e : r.events)
    if ((e.kind == EventKind::memcpy || e.kind == EventKind::cuda_sync) && e.correlation != 0)
      gpu_by_correlation.emplace(e.correlation, &e);
  int dtoh = 0, reads = 0, waited = 0;
  for (const Event& e : r.events)
    if (e.kind == EventKind::memcpy && e.name.find("DtoH") != std::string_view::npos) ++dtoh;
  const std::string_view call = read == Read::item ? "cudaMemcpy" : "cudaStreamSynchronize";
  for (const Event& e : r.events) {
    if (e.kind != EventKind::cuda_runtime || e.name != call) continue;
    ++reads;
    const auto it = gpu_by_correlation.find(e.correlation);
    if (it == gpu_by_correlation.end()) continue;
    const Event& g = *it->second;
    // The call returns only once the GPU is done with what it waits for (GPU times are put on the
    // CPU's clock to within about a microsecond: allow a few).
    constexpr int64_t kClockSlackNs = 5'000;
    const bool right_kind = read == Read::item ? g.kind == EventKind::memcpy : g.name == "Stream Sync";
    if (right_kind && g.end_ns <= e.end_ns + kClockSlackNs) ++waited;
  }
  bool ok = true;
  if (read == Read::none) return expect(dtoh == 0, "no device-to-host copy in the window");
  ok &= expect(dtoh == active, fmt::format("{} device-to-host copies of the loss, one per step", dtoh));
  ok &= expect(reads == active && waited == active,
               fmt::format("{} {} calls, one per step, each joined (same correlation, a flow in the trace) to {} "
                           "that ends before the call returns: {}",
                           reads, call, read == Read::item ? "its Memcpy DtoH" : "a Stream Sync record", waited));
  return ok;
}

}  // namespace

bool lesson_syncs(const Flags& f, ts::Device device) {
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const int64_t T = f.batch * f.seq;
  fmt::print("== Lesson 2: hidden synchronizations. A loop of fused-MLP forwards and a loss, x [{}, {}, {}], "
             "hidden {}  {}  {}\n\n",
             f.batch, f.seq, f.dim, f.hidden, f.dtype, device.str());
  fmt::print("Guess first, then look:\n");
  // In f16 the total of the row sums (8192 rows of about 768) would overflow (65504 at most): there
  // the rows are added in f32.
  const bool f32_total = dtype == ts::DType::f16;
  const ts::DType loss_dtype = f32_total ? ts::DType::f32 : dtype;
  fmt::print("  - each step: y = mlp(x); loss = {}, a one-element tensor on the device{}.\n"
             "    Three loops: none (the loss stays {}), item (loss.item<float>() every step), to_cpu\n"
             "    (ts::to(loss, cpu) every step).\n",
             f32_total ? "sum(to(sum(y * y, 1), f32), 0)" : "sum(sum(y * y, 1), 0)",
             f32_total ? " (its rows added in f32: in f16 their total would overflow)" : "",
             device.is_cuda() ? "on the GPU" : "where it is");
  if (device.is_cuda()) {
    fmt::print("  - none: the CPU only queues work. It finishes a step's launches long before the GPU has run\n"
               "    them and goes on to the next: a kernel starts long after its launch call (the queue),\n"
               "    the GPU never waits, and the wait comes once, in the cudaDeviceSynchronize that ends the\n"
               "    window.\n"
               "  - item: item() is not an op here: it is a plain cudaMemcpy of the {}-byte loss to the host.\n"
               "    The copy waits behind the whole step's GPU work, so the cudaMemcpy row's CPU time is about\n"
               "    the step's GPU time. The table shows it as a runtime row under ProfilerStep*, with no op\n"
               "    around it; the trace shows its flow arrow to a Memcpy DtoH at the end of the step's kernels.\n"
               "    The GPU then idles while the CPU launches the next step; kernels start soon after their\n"
               "    launch.\n"
               "  - to_cpu: an op. ts::to -> ts::copy_ -> cudaMemcpyAsync + cudaStreamSynchronize, as PyTorch's\n"
               "    item() is aten::item -> aten::_local_scalar_dense -> cudaMemcpyAsync + cudaStreamSynchronize.\n"
               "    The culprit is the op with the large CPU total; the trace shows a Stream Sync on the\n"
               "    stream's lane with the sync call's flow. Printing a CUDA tensor (str()) reads it the same way.\n",
               ts::element_size(loss_dtype));
  } else {
    fmt::print("  - on the CPU every op has finished when it returns: reading the loss waits for nothing, the\n"
               "    three loops cost the same. Run with --device cuda to see the waits.\n");
  }
  fmt::print("\n");

  ts::manual_seed(0);
  const nn::GeGLUMLP mlp(f.dim, f.hidden, nn::MlpPath::fused, {dtype, device}, "mlp_fwd");
  const ts::Tensor x = ts::randn({f.batch, f.seq, f.dim}, {dtype, device});
  ts::Tensor y, loss;
  float read_value = 0;
  bool ok = true;
  std::map<std::string, float> losses;
  std::map<std::string, double> wall_us;
  for (Read read : {Read::none, Read::item, Read::to_cpu}) {
    const auto step = [&] {
      y = mlp.forward(x);
      const ts::Tensor rows = ts::sum(ts::mul(y, y).view({T, f.dim}), 1);
      loss = ts::sum(f32_total ? ts::to(rows, ts::DType::f32) : rows, 0);
      if (read == Read::item) read_value = loss.item<float>();
      if (read == Read::to_cpu) read_value = ts::to(loss, ts::kCPU).item<float>();
    };
    for (int i = 0; i < f.warmup; ++i) step();
    fmt::print("-- loop {}\n", read_name(read));
    const Profile p = profile(step, f, device, fmt::format("{}_{}_syncs_{}", shape_tag(f), f.temperature(), read_name(read)),
                              /*memory=*/false, "cpu_time_total", /*row_limit=*/14);
    // The same loop without the profiler, on the host's clock: the step's real cost.
    const int kSteps = device.is_cuda() ? 20 : 5;
    if (device.is_cuda()) ts::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSteps; ++i) step();
    if (device.is_cuda()) ts::cuda::synchronize();
    const double per_step =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kSteps;
    wall_us[read_name(read)] = per_step;
    losses[read_name(read)] = loss.item<float>();
    const prof::KeyAverage* step_row = p.averages.find("ProfilerStep*");
    fmt::print("per step: {} on the host clock ({} steps, unprofiled, synchronized at the end); CPU time {} "
               "(ProfilerStep*, profiled)\n",
               us_str(per_step), kSteps, us_str(step_row != nullptr ? step_row->cpu_time_us() : 0.0));
    if (device.is_cuda() && cupti_recorded(p)) {
      const Timeline t = timeline_of(p.recording);
      fmt::print("GPU in the window: busy {} ({} per step), idle {} between its first and last work ({} per "
                 "step); a kernel starts {} after its launch call (median), {} at most\n",
                 us_str(t.gpu_busy_us), us_str(t.gpu_busy_us / f.active), us_str(t.gpu_idle_us),
                 us_str(t.gpu_idle_us / f.active), us_str(t.launch_delay_median_us), us_str(t.launch_delay_max_us));
      for (const char* row : {"cudaMemcpy", "ts::to", "cudaStreamSynchronize", "cudaDeviceSynchronize"})
        if (const prof::KeyAverage* k = p.averages.find(row))
          fmt::print("  {:<22} CPU total {} in {} calls\n", row, us_str(k->cpu_time_total_us()), k->count);
      ok &= check_reads(p, read, f.active);
    } else if (device.is_cuda()) {
      fmt::print("(CUPTI did not record this run: the sync records cannot be checked)\n");
    }
    fmt::print("\n");
  }
  // Every loop computed the same loss from the same inputs.
  const std::vector<double> yv = y.to_vector<double>();
  double ref = 0;
  for (double v : yv) ref += v * v;
  const auto agree = [&](float a, float b) { return std::abs(a - b) <= tolerance_for(dtype) * std::abs(b); };
  ok &= expect(agree(losses["item"], losses["none"]) && agree(losses["to_cpu"], losses["none"]),
               fmt::format("the three loops computed the same loss: {}, {}, {}", losses["none"], losses["item"],
                           losses["to_cpu"]));
  ok &= report_check("the loss", std::abs(losses["none"] - ref) / ref, tolerance_for(dtype));
  if (device.is_cuda())
    fmt::print("per step on the host clock: none {}, item {}, to_cpu {}\n", us_str(wall_us["none"]),
               us_str(wall_us["item"]), us_str(wall_us["to_cpu"]));
  fmt::print("\n");
  (void)read_value;
  return ok;
}

}  // namespace memory_and_syncs
