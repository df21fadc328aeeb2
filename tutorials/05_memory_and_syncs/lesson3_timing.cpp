// tutorials/05_memory_and_syncs/lesson3_timing.cpp: tutorial 05's lesson 3: profiling vs benchmarking.
//
// One gelu kernel (tanh, on [2048, 3072] bf16 on a GPU) timed eleven ways, to see what each clock
// measures: its duration in the trace (L2 warm, and flushed by a 256 MB fill_ before each call),
// CUDA events around one call (GPU idle, L2 flushed, L2 warm), around many calls,
// bench/bench_timing.h's median (what ts_bench and ts_ladder report), the host clock without and
// with a sync; and the profiler's own cost per op. On the CPU the ways that need a GPU are left
// out. Checks that the trace holds one gelu per call and the result against float64; returns false
// when a check fails.
//
// Writes traces/05_memory_and_syncs/<rows>x<H>_<dtype>_timing_gelu[_flushed][_nocache].{json,txt}.
//
// Run: ./build/dev/tutorials/05_memory_and_syncs --lesson timing [--timing-rows 2048] [--hidden 3072]
//          [--dtype bf16|f16|f32] [--device cpu|cuda]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "tutorials/05_memory_and_syncs/lessons.h"

#if TS_HAVE_CUDA  // the CUDA events of this lesson; a CPU-only build runs its CPU ways
#include <cuda_runtime_api.h>

#include "tensor/cuda_check.h"
#endif

namespace memory_and_syncs {
namespace {

struct Way {
  std::string name;
  double us;  // < 0: not measured on this device
  std::string what;
};

}  // namespace

bool lesson_timing(const Flags& f, ts::Device device) {
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const int64_t rows = f.timing_rows, cols = f.hidden;
  const auto es = static_cast<int64_t>(ts::element_size(dtype));
  const int64_t moved = 2 * rows * cols * es;  // read x, write gelu(x)
  const int64_t l2 = device.is_cuda() ? ts::cuda::device_properties().l2_cache_bytes : 0;
  constexpr int kCallsPerStep = 10, kRepeats = 50, kBatch = 100;
  fmt::print("== Lesson 3: profiling vs benchmarking. One {}: gelu (tanh) on [{}, {}] {}  {}\n\n",
             device.is_cuda() ? "kernel" : "op", rows, cols, f.dtype, device.str());
  fmt::print("Guess first, then look:\n");
  fmt::print("  - each call reads {} and writes {}: {} moved{}.\n", mem(rows * cols * es), mem(rows * cols * es),
             mem(moved),
             device.is_cuda() ? fmt::format("; the L2 cache holds {}, so {}", mem(l2),
                                            moved <= l2 ? "a call right after another finds its input in L2 (warm)"
                                                        : "a call never finds all of its input in L2")
                              : "");
  if (device.is_cuda())
    fmt::print("  - the trace times the kernel alone, on the GPU's clock (CUPTI). CUDA events time what the\n"
               "    GPU did between them: around one call on an idle GPU that includes the launch (the kernel\n"
               "    arrives microseconds after the start event); after a busy memset it is the kernel alone\n"
               "    (bench/bench_timing.h: the memset also empties L2, so ts_bench and ts_ladder time every\n"
               "    call from HBM, as in a model); around {} calls in a row they time the throughput, which\n"
               "    the CPU bounds when a call's launch takes longer than its kernel.\n"
               "  - the host clock without a sync times only the CPU's part: the dispatch and the launch\n"
               "    (the kernel runs later). With a sync before and after it adds the kernel and the\n"
               "    sync's round trip.\n"
               "  - the profiler costs CPU time per op (its records, CUPTI's callbacks), not GPU time.\n",
               kBatch);
  else
    fmt::print("  - on the CPU an op has finished when it returns: the trace's op time and the host clock\n"
               "    agree. CUDA events, L2 and syncs are GPU matters (--device cuda).\n"
               "  - the profiler costs CPU time per op: its records.\n");
  fmt::print("\n");

  ts::manual_seed(0);
  const ts::Options opt{dtype, device};
  const ts::Tensor a = ts::randn({rows, cols}, opt);
  ts::Tensor out;
  const auto call = [&] { out = ts::gelu(a, ts::GeluApprox::tanh); };
  const auto sync = [&] {
    if (device.is_cuda()) ts::cuda::synchronize();
  };
  for (int i = 0; i < 3; ++i) call();
  sync();

  std::vector<Way> ways;
  bool ok = true;
  // 1. The trace: the kernel's duration (GPU) or the op's (CPU), median of every call recorded.
  const auto trace_median = [&](const Profile& p) {
    std::vector<double> d;
    std::map<uint64_t, bool> gelu_ids;
    for (const Event& e : p.recording.events)
      if (e.kind == EventKind::cpu_op && e.name == "ts::gelu") gelu_ids[e.id] = true;
    for (const Event& e : p.recording.events) {
      const bool is_kernel = e.kind == EventKind::kernel && gelu_ids.contains(e.id);
      const bool is_op = !device.is_cuda() && e.kind == EventKind::cpu_op && e.name == "ts::gelu";
      if (is_kernel || is_op) d.push_back(static_cast<double>(e.duration_ns()) / 1e3);
    }
    if (device.is_cuda() && !cupti_recorded(p)) {
      fmt::print("(CUPTI did not record this run ({}): no kernel records, no kernel durations)\n",
                 p.recording.device_activity.error);
      return -1.0;
    }
    ok &= expect(static_cast<int>(d.size()) == kCallsPerStep * f.active,
                 fmt::format("the trace holds {} gelu {}, one per call", d.size(), device.is_cuda() ? "kernels" : "ops"));
    return median(d);
  };
  fmt::print("-- the trace, {} calls per step\n", kCallsPerStep);
  const std::string tag = fmt::format("{}x{}_{}", rows, cols, f.dtype);
  const Profile warm = profile([&] { for (int i = 0; i < kCallsPerStep; ++i) call(); }, f, device,
                               fmt::format("{}_timing_gelu{}", tag, allocator_tag(device)), false,
                               device.is_cuda() ? "cuda_time_total" : "cpu_time_total", 10);
  ways.push_back({device.is_cuda() ? "trace: the kernel's duration, L2 warm" : "trace: the op's duration",
                  trace_median(warm),
                  device.is_cuda() ? "CUPTI's record of each kernel, calls back to back" : "the op's CPU time"});
  ts::Tensor flush;
  if (device.is_cuda()) {
    // 256 MB written before every call empties the L2 (a fill_ kernel in the trace).
    flush = ts::empty({int64_t{64} << 20}, {ts::DType::f32, device});
    int k = 0;
    fmt::print("-- the trace, a 256 MB fill_ before each call\n");
    const Profile cold = profile([&] {
      for (int i = 0; i < kCallsPerStep; ++i) {
        ts::fill_(flush, ++k);
        call();
      }
    }, f, device, fmt::format("{}_timing_gelu_flushed{}", tag, allocator_tag(device)), false, "cuda_time_total", 10);
    ways.push_back({"trace: the kernel's duration, L2 flushed", trace_median(cold), "a 256 MB fill_ before each call"});
  }

#if TS_HAVE_CUDA
  // 2. CUDA events around one call, in three settings, and around many calls.
  if (device.is_cuda()) {
    const ts::bench::CudaEvent start, stop;
    const cudaStream_t stream = ts::cuda::current_stream();
    const auto events_us = [&](const std::function<void()>& before, const std::function<void()>& timed, int per) {
      std::vector<double> samples;
      for (int r = 0; r < kRepeats; ++r) {
        before();
        TS_CUDA_CHECK(cudaEventRecord(start.get(), stream));
        timed();
        TS_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
        TS_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        float ms = 0;
        TS_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        samples.push_back(static_cast<double>(ms) * 1e3 / per);
      }
      return median(samples);
    };
    const auto memset_flush = [&] {
      TS_CUDA_CHECK(cudaMemsetAsync(flush.data_ptr(), 0, static_cast<size_t>(flush.numel()) * flush.element_size(), stream));
    };
    ways.push_back({"CUDA events, 1 call, GPU idle", events_us(sync, call, 1),
                    "synchronized first: the launch's latency + the kernel"});
    ways.push_back({"CUDA events, 1 call, after a memset", events_us(memset_flush, call, 1),
                    "the GPU busy, L2 flushed: bench_timing.h's way"});
    ways.push_back({"CUDA events, 1 call, after a memset + 1 call", events_us([&] { memset_flush(); call(); }, call, 1),
                    "the GPU busy, L2 warm from the call before"});
    ways.push_back({fmt::format("CUDA events, {} calls in a row / {}", kBatch, kBatch),
                    events_us(sync, [&] { for (int i = 0; i < kBatch; ++i) call(); }, kBatch),
                    "throughput: max(kernel, the CPU's launch rate)"});
    std::vector<double> bench = ts::bench::device_times_ms(call, /*warmup=*/3, kRepeats);
    for (double& v : bench) v *= 1e3;
    ways.push_back({"ts::bench::device_times_ms (median)", median(bench), "what ts_bench and ts_ladder report"});
  }
#endif

  // 3. The host's clock around one call, without and with a sync.
  const auto host_us = [&](bool synced) {
    std::vector<double> samples;
    for (int r = 0; r < kRepeats; ++r) {
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      call();
      if (synced) sync();
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(samples);
  };
  ways.push_back({"host clock, 1 call, no sync", host_us(false),
                  device.is_cuda() ? "the CPU's dispatch + launch; the kernel runs after" : "the whole op"});
  if (device.is_cuda())
    ways.push_back({"host clock, 1 call + sync", host_us(true), "dispatch + launch + kernel + the sync's round trip"});

  // 4. The profiler's own cost per op, on a one-element gelu (so that the op's own work is small):
  // the host's time per call, recording (CUDA activity too on a GPU) or not.
  const ts::Tensor one = ts::randn({1}, opt);
  const auto tiny_batch_us = [&] {
    constexpr int kTiny = 1000;
    std::vector<double> samples;
    for (int r = 0; r < 5; ++r) {
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kTiny; ++i) ts::gelu(one, ts::GeluApprox::tanh);
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kTiny);
    }
    sync();
    return median(samples);
  };
  tiny_batch_us();  // first-use costs
  const double plain = tiny_batch_us();
  double profiled = 0;
  {
    prof::ProfilerConfig config;
    if (device.is_cuda()) config.activities.push_back(prof::Activity::CUDA);
    prof::Profiler p(config);
    prof::ProfilerGuard guard(p);
    profiled = tiny_batch_us();
  }
  ways.push_back({"host clock per call, gelu of 1 element, not profiled", plain, "1000 calls in a row"});
  ways.push_back({"host clock per call, gelu of 1 element, profiled", profiled,
                  fmt::format("the profiler adds {} per op", us_str(profiled - plain))});

  fmt::print("-- one {}, timed {} ways (medians: of every call in a trace, of {} samples for one call, of 5 "
             "batches for many calls)\n",
             device.is_cuda() ? "kernel" : "op", ways.size(), kRepeats);
  for (const Way& w : ways)
    fmt::print("  {:<52} {:>12}   {}\n", w.name, w.us < 0 ? std::string("-") : us_str(w.us), w.what);
  if (!device.is_cuda())
    fmt::print("  (CUDA events, L2 and syncs: --device cuda)\n");
  else
    fmt::print("For what happens inside the kernel (bandwidth, stalls, the source line of each), move to Nsight\n"
               "Compute:\n"
               "  ncu --section SpeedOfLight --kernel-name-base demangled -k regex:GeluTanh -c 1 \\\n"
               "      ./build/dev/tutorials/05_memory_and_syncs --lesson timing\n"
               "(the dev preset builds with -lineinfo for ncu's source view; ncu empties the caches before each\n"
               "replay and fixes the clock; while it runs, CUPTI is ncu's: the profiler falls back to CUDA events\n"
               "and says so).\n");

  // gelu against float64 on a few elements.
  const std::vector<double> in = a.view({-1}).to_vector<double>(), got = out.view({-1}).to_vector<double>();
  const double c = std::sqrt(2.0 / std::numbers::pi);
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < in.size(); i += std::max<size_t>(1, in.size() / 997)) {
    const double v = in[i], ref = 0.5 * v * (1 + std::tanh(c * (v + 0.044715 * v * v * v)));
    diff2 += (got[i] - ref) * (got[i] - ref);
    ref2 += ref * ref;
  }
  ok &= report_check("gelu on ~1000 elements", std::sqrt(diff2 / ref2), dtype == ts::DType::f32 ? 1e-5 : 1e-2);
  fmt::print("\n");
  return ok;
}

}  // namespace memory_and_syncs
