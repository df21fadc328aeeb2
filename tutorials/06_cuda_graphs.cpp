// tutorials/06_cuda_graphs.cpp: CUDA graphs: a whole step captured once, then replayed as one launch.
//
// Each workload's step runs eagerly (the host dispatches every op and launches every kernel) and
// replayed from a CUDA graph (nn::CapturedStep: the step once eagerly, so that first-use costs stay
// out of the capture, then captured on inputs of its own; a replay is one cudaGraphLaunch, and a step
// with new data first copies them into those inputs, ts::copy_(x, next)):
//   step       part 1's add(matmul(x, w), b), x and w [N, N], b [N]: at N = 64 the host's launches are
//              the step (overhead-bound); at --size 4096 the GEMM is (compute-bound: graphs stop helping)
//   mlp        tutorial 03's GeGLU MLP, eager path, x [64, 128, 768], hidden 3072
//   attention  tutorial 04's layer: causal attention, naive path, q, k, v [4, 16, 1024, 64]
// Eager steps alternate between two sets of inputs. The run: the capture, and a check that the
// replay's output equals the eager one bit for bit (the same kernels on the same values); the host's
// time per step with no profiler loaded yet (medians of batches of 20 steps, a synchronize after each,
// eager and replayed batches alternating; replayed with fresh inputs copied in, and alone); each mode
// under the series' schedule, the replay alone as the series' loops reuse their inputs (the table,
// the trace, and per recorded step its width on the host, the GPU's busy and idle time in it, its
// kernels); the two side by side; what a capture cannot hold (a host read inside it, refused by
// name). --mode both is the default. On the CPU there are no graphs: the eager mode runs, the graph
// mode prints the library's refusal, and the exit status is 0.
//
// Writes traces/06_cuda_graphs/<shape>_<dtype>_<cold|warm>_<workload>_<eager|graph>[_<tag>].{json,txt},
// <shape> being N for the step, BxSxDxH for the MLP, BxHxSxD for attention.
//
// Run: ./build/dev/tutorials/06_cuda_graphs [--workload step|mlp|attention] [--size 64] [--batch B]
//          [--mode both|eager|graph] [--timing-batches 200] [--dtype bf16|f16|f32] [--warmup 0]
//          [--active 3] [--device cpu|cuda] [--out-dir DIR] [--tag NAME]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/attention.h"
#include "nn/captured_step.h"
#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"
#include "tutorials/tutorial_support.h"

namespace {

namespace nn = ts::nn;
namespace prof = ts::profiler;
using ts::Tensor;

constexpr int kTimingSteps = 20;       // steps per timed batch
constexpr int kTimingWarmup = 5;       // batches of each mode run before the timed ones
constexpr double kTimingBudgetS = 10;  // the timed batches stop past this, once 5 of them ran

struct Flags : tutorial::CommonFlags {
  std::string workload = "step", mode = "both";
  int64_t size = 64, batch = 0;  // batch 0: the workload's own (64 for the MLP, 4 for attention)
  bool size_given = false;
  int timing_batches = 200;
  bool eager() const { return mode != "graph"; }
  bool graph() const { return mode != "eager"; }
};

struct Workload {
  std::string label, config;        // the header's line; the artifacts' name before "_<mode>"
  nn::CapturedStep::Step step;
  std::vector<Tensor> inputs[2];    // step i runs on inputs[i % 2]
  int64_t kernels = 0, copies = 0;  // per eager step on a GPU (a library GEMM counted as one kernel)
  std::string expect;               // what to guess of the eager step
};

Workload make_workload(const Flags& f, ts::Options opt) {
  Workload w;
  const std::string tail = fmt::format("{}_{}_{}", f.dtype, f.temperature(), f.workload);
  ts::manual_seed(0);
  if (f.workload == "step") {
    const int64_t n = f.size;
    const Tensor weight = ts::randn({n, n}, opt), b = ts::randn({n}, opt);
    w.step = [weight, b](const std::vector<Tensor>& in) {
      prof::RecordFunction scope("matmul_add");
      return std::vector<Tensor>{ts::add(ts::matmul(in[0], weight), b)};
    };
    for (auto& in : w.inputs) in = {ts::randn({n, n}, opt)};
    w.label = fmt::format("add(matmul(x, w), b), x and w [{}, {}], b [{}]", n, n, n);
    w.config = fmt::format("{}_{}", n, tail);
    w.kernels = 2;
    const double flop = 2.0 * static_cast<double>(n * n) * static_cast<double>(n);
    w.expect = n <= 256 ? fmt::format("a {:.2f} MFLOP GEMM and an add, each a few microseconds: less than\n"
                                      "    the host takes to dispatch them (overhead-bound). The GPU idles most of "
                                      "each step.",
                                      flop / 1e6)
                        : fmt::format("a {:.1f} GFLOP GEMM, far longer than the host takes to launch it\n"
                                      "    (compute-bound): the host runs ahead, the GPU is busy across every step.",
                                      flop / 1e9);
  } else if (f.workload == "mlp") {
    const int64_t batch = f.batch > 0 ? f.batch : 64, seq = 128, dim = 768, hidden = 3072;
    const auto mlp = std::make_shared<nn::GeGLUMLP>(dim, hidden, nn::MlpPath::eager, opt, "mlp_fwd");
    w.step = [mlp](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp->forward(in[0])}; };
    for (auto& in : w.inputs) in = {ts::randn({batch, seq, dim}, opt)};
    w.label = fmt::format("GeGLU MLP, eager path, x [{}, {}, {}], hidden {}", batch, seq, dim, hidden);
    w.config = fmt::format("{}x{}x{}x{}_{}", batch, seq, dim, hidden, tail);
    w.kernels = nn::GeGLUMLP::kernels_per_forward(nn::MlpPath::eager);
    w.expect = fmt::format("3 GEMMs of {:.3g} GFLOP each, gelu and mul: the GPU's work is longer than\n"
                           "    the host's dispatch of the step's ops. How much idle is left to remove?",
                           2.0 * static_cast<double>(batch * seq * dim * hidden) / 1e9);
  } else {
    const int64_t B = f.batch > 0 ? f.batch : 4, H = 16, S = 1024, D = 64;
    const nn::AttentionPath path = nn::AttentionPath::naive;
    const auto attn = std::make_shared<nn::CausalSelfAttention>(path, S, opt.device, true, "attn_fwd");
    w.step = [attn](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{attn->forward(in[0], in[1], in[2])};
    };
    for (auto& in : w.inputs)
      for (int t = 0; t < 3; ++t) in.push_back(ts::randn({B, H, S, D}, opt));  // q, k, v
    w.label = fmt::format("causal attention, naive path, q, k, v [{}, {}, {}, {}]", B, H, S, D);
    w.config = fmt::format("{}x{}x{}x{}_{}", B, H, S, D, tail);
    w.kernels = nn::expected_kernels(path, true, opt.dtype);
    w.copies = nn::expected_memcpys(path, true, opt.dtype);
    w.expect = fmt::format("matmul, mul, masked_fill (its clone is the copy), softmax, matmul, on\n"
                           "    [{}, {}, {}, {}] scores: the GPU's work is longer than the host's dispatch.",
                           B, H, S, S);
  }
  return w;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- each recorded step, from the recording --------------------------------------------------------

struct StepStats {
  std::string name;                             // "#2", from ProfilerStep#2
  double cpu_us = 0, busy_us = 0, idle_us = 0;  // the step's window on the host; the GPU's time in it
  double kernels = 0, copies = 0;               // launched by the step (copies: memcpy and memset)
};

// Per ProfilerStep#N: its window [start, end) on the host; busy: the union of every kernel, memcpy
// and memset interval clipped to the window (work launched by an earlier recorded step counts where it
// ran; the unrecorded steps' work is not in the recording, and profile_mode drains it before the first);
// idle: the rest of the window. Kernels and copies count in the step whose host call launched them;
// a graph's copy run as a kernel ("memcpy128", "memset32") counts as a copy.
std::vector<StepStats> step_stats(const prof::Recording& r) {
  std::vector<const prof::Event*> steps;
  std::map<uint64_t, int64_t> launched_at;  // CUPTI correlation -> the start of the call that launched it
  for (const prof::Event& e : r.events) {
    if (e.kind == prof::EventKind::profiler_step) steps.push_back(&e);
    if (e.kind == prof::EventKind::cuda_runtime || e.kind == prof::EventKind::cuda_driver)
      launched_at.emplace(e.correlation, e.start_ns);
  }
  std::vector<StepStats> stats(steps.size());
  std::vector<std::pair<int64_t, int64_t>> work;
  for (const prof::Event& e : r.events) {
    if (!prof::is_device_activity(e.kind) || e.kind == prof::EventKind::gpu_user_annotation) continue;
    work.emplace_back(e.start_ns, e.end_ns);
    const auto launch = launched_at.find(e.correlation);
    for (size_t s = 0; s < steps.size() && launch != launched_at.end(); ++s)
      if (steps[s]->start_ns <= launch->second && launch->second < steps[s]->end_ns)
        ++(e.kind == prof::EventKind::kernel && !e.name.starts_with("memcpy") && !e.name.starts_with("memset")
               ? stats[s].kernels
               : stats[s].copies);
  }
  std::sort(work.begin(), work.end());
  std::vector<std::pair<int64_t, int64_t>> merged;  // the union, as disjoint intervals in order
  for (const auto& [a, b] : work) {
    if (!merged.empty() && a <= merged.back().second) merged.back().second = std::max(merged.back().second, b);
    else merged.emplace_back(a, b);
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    const int64_t lo = steps[s]->start_ns, hi = steps[s]->end_ns;
    int64_t busy = 0;
    for (const auto& [a, b] : merged) busy += std::max<int64_t>(0, std::min(b, hi) - std::max(a, lo));
    stats[s].name = std::string(steps[s]->name.substr(steps[s]->name.find('#')));
    stats[s].cpu_us = static_cast<double>(hi - lo) / 1e3;
    stats[s].busy_us = static_cast<double>(busy) / 1e3;
    stats[s].idle_us = stats[s].cpu_us - stats[s].busy_us;
  }
  return stats;
}

// Prints each recorded step; returns their medians.
StepStats print_step_stats(const prof::Recording& r, bool gpu) {
  const std::vector<StepStats> stats = step_stats(r);
  fmt::print("each recorded step: its window on the host{}\n  {:<6} {:>12}{}\n",
             gpu ? "; the GPU's time in it; the work it launched (copies: memcpy and memset)" : "", "step", "CPU us",
             gpu ? fmt::format(" {:>12} {:>12} {:>7} {:>8} {:>7}", "GPU busy us", "GPU idle us", "idle", "kernels",
                               "copies")
                 : "");
  for (const StepStats& s : stats)
    fmt::print("  {:<6} {:>12.3f}{}\n", s.name, s.cpu_us,
               gpu ? fmt::format(" {:>12.3f} {:>12.3f} {:>6.1f}% {:>8} {:>7}", s.busy_us, s.idle_us,
                                 s.cpu_us > 0 ? 100 * s.idle_us / s.cpu_us : 0.0, s.kernels, s.copies)
                   : "");
  const auto med = [&stats](double StepStats::*field) {
    std::vector<double> v;
    for (const StepStats& s : stats) v.push_back(s.*field);
    return median(v);
  };
  return {"median", med(&StepStats::cpu_us), med(&StepStats::busy_us), med(&StepStats::idle_us),
          med(&StepStats::kernels), med(&StepStats::copies)};
}

// ---- the parts of the lesson ------------------------------------------------------------------------

// Bit for bit: the replay runs the eager step's kernels on the same values. False when any element
// differs (a kernel that is not deterministic, or a replay that read other memory), said with how much.
bool check_replay(const Workload& w, nn::CapturedStep& captured) {
  const std::vector<double> eager = w.step(w.inputs[0])[0].to_vector<double>();
  const std::vector<double> replayed = captured(w.inputs[0])[0].to_vector<double>();
  double worst = 0;
  int64_t differ = 0;
  for (size_t i = 0; i < eager.size(); ++i) {
    const double a = eager[i], b = replayed[i];
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    ++differ;
    worst = std::max(worst, std::isnan(a - b) ? std::numeric_limits<double>::infinity() : std::abs(a - b));
  }
  fmt::print("check: the replayed output against the eager output on the same inputs: max abs difference {:g}, "
             "{} of {} elements differ: {}\n",
             worst, differ, eager.size(), differ == 0 ? "OK (bit for bit)" : "MISMATCH");
  if (differ > 0)
    fmt::print("  The graph holds the eager step's kernels: a difference means one of them is not deterministic\n"
               "  (atomics, a GEMM plan chosen otherwise under capture) or the replay read other memory.\n");
  return differ == 0;
}

struct Timed {
  std::string name;
  std::function<void(int)> step;    // step(i) runs on inputs[i % 2]
  double host_us = 0, wall_us = 0;  // per step, medians over the batches (time_unprofiled)
};

// Batches of kTimingSteps steps with no profiler: the host's time to issue them (host), and that with
// the synchronize that ends the batch (wall). The modes' batches alternate, so that drift in clocks or
// load falls on each alike.
void time_unprofiled(const Flags& f, std::vector<Timed>& modes) {
  using clock = std::chrono::steady_clock;
  const auto per_step = [](clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count() / kTimingSteps;
  };
  std::vector<std::vector<double>> host(modes.size()), wall(modes.size());
  const auto began = clock::now();
  int timed = 0;
  for (int batch = 0; batch < kTimingWarmup + f.timing_batches; ++batch) {
    for (size_t m = 0; m < modes.size(); ++m) {
      const auto t0 = clock::now();
      for (int i = 0; i < kTimingSteps; ++i) modes[m].step(i);
      const auto t1 = clock::now();
      ts::cuda::synchronize();
      const auto t2 = clock::now();
      if (batch < kTimingWarmup) continue;
      host[m].push_back(per_step(t1 - t0));
      wall[m].push_back(per_step(t2 - t0));
    }
    timed += batch >= kTimingWarmup;
    if (timed >= 5 && std::chrono::duration<double>(clock::now() - began).count() > kTimingBudgetS) break;
  }
  fmt::print("no profiler: medians of {} batches of {} steps per mode ({} warm-up batches first{}):\n  {:<26} {:>16} "
             "{:>38}\n",
             timed, kTimingSteps, kTimingWarmup,
             timed < f.timing_batches ? fmt::format(", stopped at {:g} s", kTimingBudgetS) : "", "", "host per step",
             "wall per step (host + the GPU's wait)");
  for (size_t m = 0; m < modes.size(); ++m) {
    modes[m].host_us = median(host[m]);
    modes[m].wall_us = median(wall[m]);
    fmt::print("  {:<26} {:>13.3f} us {:>35.3f} us\n", modes[m].name, modes[m].host_us, modes[m].wall_us);
  }
  if (modes.size() == 3)
    fmt::print("  eager over replayed: host {:.2f}x, wall {:.2f}x (inputs copied in); host {:.2f}x (replay alone)\n",
               modes[0].host_us / modes[1].host_us, modes[0].wall_us / modes[1].wall_us,
               modes[0].host_us / modes[2].host_us);
  fmt::print("\n");
}

// One mode under the series' schedule: the guess, the table and the trace, each recorded step, the kernels.
StepStats profile_mode(const Flags& f, ts::Device device, const Workload& w, nn::CapturedStep* captured, bool& ok) {
  fmt::print("---- {} ----\nGuess first, then look:\n", captured ? "replayed from the graph" : "eager");
  if (captured == nullptr) {
    fmt::print("  - {} kernel{}{} per step on a GPU: {}\n", w.kernels, w.kernels == 1 ? "" : "s",
               w.copies > 0 ? fmt::format(" and {} copy", w.copies) : "", w.expect);
  } else {
    fmt::print("  - the host dispatches none of the step's ops: it replays the graph on the inputs it was captured\n"
               "    with (the same values every step, as the series' loops; the timing above also copied fresh\n"
               "    inputs in): ts::cuda::Graph::replay, one cudaGraphLaunch. Under the replay's row the\n"
               "    captured ops show no CPU time (none ran on the host) and their kernels' CUDA time: the same\n"
               "    {} kernels as eagerly{}. What is left of the host's step, and of the GPU's idle time?\n",
               w.kernels,
               w.copies > 0 ? " (the step's own copy may run as a kernel, memcpy128: a graph's copy node)" : "");
  }
  fmt::print("  - schedule wait={}, warmup={}, active={}: ProfilerStep#{}..#{} are recorded{}.\n\n", f.schedule_wait,
             f.schedule_warmup, f.active, f.first_recorded_step(), f.first_recorded_step() + f.active - 1,
             device.is_cuda() ? ", the GPU drained before the first" : "");
  // The profiler keeps only the GPU work launched in its recorded steps. Where the GPU lags the host
  // (a compute-bound step), the first recorded windows would otherwise find it still running the
  // unrecorded steps' work, and show it idle: so the last unrecorded step waits for the GPU to drain.
  int i = 0, calls = 0;
  const int drain_after = f.warmup + f.first_recorded_step();
  const std::function<void()> step = [&] {
    if (captured != nullptr) (void)captured->replay();
    else (void)w.step(w.inputs[i++ % 2]);
    if (++calls == drain_after && device.is_cuda()) ts::cuda::synchronize();
  };
  for (int k = 0; k < f.warmup; ++k) step();
  const tutorial::ProfiledRun run =
      tutorial::profile_steps(step, f, device, w.config + (captured ? "_graph" : "_eager"), /*row_limit=*/25);
  const StepStats medians = print_step_stats(run.recording, device.is_cuda());
  const tutorial::KernelCount count =
      tutorial::check_kernel_count(run.recording, w.kernels, f.active, "step", device.is_cuda());
  fmt::print("{}\n\n", count.report);
  ok = count.passed() && ok;
  return medians;
}

void print_side_by_side(const StepStats& eager, const StepStats& replayed, const std::vector<Timed>& timed) {
  const auto row = [](const char* what, double e, double r, int digits = 3) {
    fmt::print("  {:<34} {:>12.{}f} {:>12.{}f} {:>10}\n", what, e, digits, r, digits,
               e > 0 && r > 0 ? fmt::format("{:.2f}x", e / r) : "-");
  };
  fmt::print("eager beside replayed (profiled: the medians of the recorded steps):\n  {:<34} {:>12} {:>12} {:>10}\n",
             "", "eager", "replayed", "ratio");
  row("CPU per step, profiled (us)", eager.cpu_us, replayed.cpu_us);
  row("GPU busy per step (us)", eager.busy_us, replayed.busy_us);
  row("GPU idle per step (us)", eager.idle_us, replayed.idle_us);
  row("kernels per step", eager.kernels, replayed.kernels, 0);
  row("copies per step", eager.copies, replayed.copies, 0);
  if (timed.size() == 3) {
    row("host per step, no profiler (us)", timed[0].host_us, timed[1].host_us);
    row("wall per step, no profiler (us)", timed[0].wall_us, timed[1].wall_us);
  }
  fmt::print("\n");
}

// A host read inside a capture: the step prints its loss. The library refuses it by name and abandons
// the capture; the program goes on eagerly.
void show_what_a_capture_cannot_hold(const Workload& w) {
  fmt::print("What a capture cannot hold. Guess first: the step prints its loss, sum(out).item(), while it is\n"
             "being captured. What could a graph record for a value the host reads?\n");
  ts::cuda::Graph graph;
  try {
    ts::cuda::GraphCapture capture(graph);
    const Tensor out = w.step(w.inputs[0])[0];
    fmt::print("loss {}\n", ts::sum(ts::reshape(out, {-1}), 0).item<float>());
  } catch (const ts::Error& e) {
    fmt::print("  ts::Error: {}\n", e.what());
  }
  const Tensor after = w.step(w.inputs[1])[0];
  fmt::print("  the capture was abandoned (captured() {}, capturing {}); the step runs eagerly after it ({} "
             "elements out)\n\n",
             graph.captured(), ts::cuda::is_capturing(), after.numel());
}

// Why the graph mode cannot run here, in the library's words: no usable GPU (capture_begin), or a GPU
// but the step's tensors on the CPU (CapturedStep). "" when nothing refuses.
std::string graph_refusal(const Workload& w) {
  try {
    ts::cuda::Graph graph;
    graph.capture_begin();
    graph.capture_abort();
    const nn::CapturedStep refused(w.step, w.inputs[0]);
  } catch (const ts::Error& e) {
    return e.what();
  }
  return "";
}

int run(Flags f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "06_cuda_graphs");
  tutorial::choose_dtype(f, device);  // bf16, or f16 on a GPU without bf16 tensor cores
  tutorial::prepare_out_dir(f.out_dir);
  TS_CHECK(f.workload == "step" || !f.size_given, "06_cuda_graphs: --size is the step's N; --workload {} takes --batch",
           f.workload);
  TS_CHECK(f.workload != "step" || f.batch == 0,
           "06_cuda_graphs: --batch is the mlp's and attention's; the step takes --size N");
  const bool gpu = device.is_cuda();
  const Workload w = make_workload(f, {ts::parse_dtype(f.dtype), device});
  fmt::print("== Tutorial 06: CUDA graphs, {}  {}  {}  mode {}\n\n", w.label, f.dtype, device.str(), f.mode);
  bool ok = true;

  std::unique_ptr<nn::CapturedStep> captured;
  if (f.graph() && !gpu) {
    fmt::print("The graph mode cannot run here: {}\nThis lesson needs an NVIDIA GPU (--device cuda){}\n\n",
               graph_refusal(w), f.eager() ? "; the eager mode runs on the CPU." : ".");
  } else if (f.graph()) {
    captured = std::make_unique<nn::CapturedStep>(w.step, w.inputs[0]);
    fmt::print("captured: the step once eagerly, then captured on the graph's own inputs: {} nodes\n",
               captured->graph().node_count());
    ok = check_replay(w, *captured) && ok;
    fmt::print("\n");
  }

  std::vector<Timed> timed;
  if (f.eager()) timed.push_back({"eager", [&](int i) { (void)w.step(w.inputs[i % 2]); }, 0, 0});
  if (captured) {
    timed.push_back({"replayed, inputs copied in", [&](int i) { (void)(*captured)(w.inputs[i % 2]); }, 0, 0});
    timed.push_back({"replayed alone", [&](int) { (void)captured->replay(); }, 0, 0});
  }
  if (gpu && f.timing_batches > 0) {
    fmt::print("Guess first: how many microseconds does the host spend per step, eagerly and replayed? Does the\n"
               "wall time per step follow the host's time or the GPU's here?\n");
    time_unprofiled(f, timed);
  }

  StepStats eager, replayed;
  if (f.eager()) eager = profile_mode(f, device, w, nullptr, ok);
  if (captured) replayed = profile_mode(f, device, w, captured.get(), ok);
  if (f.eager() && captured) print_side_by_side(eager, replayed, timed);
  if (captured) show_what_a_capture_cannot_hold(w);
  if (f.eager() || captured) fmt::print("{}\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tutorial::run_guarded([&] {
    Flags f;
    CLI::App app{"Tutorial 06: CUDA graphs: a step run eagerly and replayed from a graph, profiled side by side"};
    app.add_option("--workload", f.workload, "what a step computes (default step: part 1's add(matmul(x, w), b))")
        ->check(tutorial::one_of({"step", "mlp", "attention"}));
    app.add_option("--size", f.size, "N of the step: x and w are [N, N] (default 64; the series uses 64 and 4096)")
        ->check(tutorial::in_range(1, 16384))
        ->each([&f](const std::string&) { f.size_given = true; });
    app.add_option("--batch", f.batch, "the mlp's and attention's batch (default 64 and 4: tutorials 03 and 04)")
        ->check(tutorial::in_range(1, 1 << 12));
    app.add_option("--mode", f.mode, "eager, replayed from a CUDA graph, or both side by side (default both)")
        ->check(tutorial::one_of({"both", "eager", "graph"}));
    app.add_option("--timing-batches", f.timing_batches,
                   "batches of 20 steps timed per mode with no profiler, on a GPU (default 200; 0: none)")
        ->check(tutorial::in_range(0, tutorial::kMaxSteps));
    tutorial::add_common_flags(app, f, "traces/06_cuda_graphs");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
