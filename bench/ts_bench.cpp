// bench/ts_bench.cpp: tensorscope's benchmark: median cost per op over many runs.
//
//   ts_bench                 every entry, as a table
//   ts_bench --filter dispatch --json out.jsonl
//   ts_bench --list          the entries, and every registered variant
//   ts_bench --gpu --json out.jsonl   the GPU entries only (make gpu-check runs this)
//
// Each entry warms up, then times `repeats` batches of `inner` calls with a
// steady clock and reports the median batch divided by `inner`. With --json,
// one object per line: {"name": ..., "value": ..., "unit": ...}.
// GPU entries time the CPU side of launches with the same clock (the device
// is synchronized after each batch, outside the timed region) and GPU work
// with CUDA events around one call, each preceded by a 256 MiB memset: it
// empties the L2 cache (50 MiB on an H200) and keeps the GPU busy while the CPU
// issues the call, so the events time the GPU's work, not the launch latency
// (as triton.testing.do_bench does). Without a GPU they print why they were skipped, and so do
// the entries a GPU of another kind cannot run (flash_v3 needs compute capability 9.0).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/bench_timing.h"
#include "nn/attention.h"
#include "nn/geglu_mlp.h"
#include "ops/attention/attention_flash.h"
#include "ops/attention/attention_flash_problem.h"  // FlashProblem: the size of flash_v2's argument
#include "ops/ops.h"
#include "ops/dispatch.h"
#include "ops/matmul/matmul.h"
#include "ops/registry.h"
#include "profiler/chrome_trace.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"
#include "tensor/file_output.h"

#if TS_HAVE_CUDA
#include "bench/bench_cuda.h"
#include "ops/hopper_tensor_map.h"  // tensor_map_encodes: the TMA descriptor cache's misses
#endif

namespace {

struct Result {
  std::string name;
  double value;
  std::string unit;
  std::string note;
  std::vector<Result> also = {};  // figures measured in the same run (printed as rows of their own)
};

// Median over `repeats` batches of the per-call time (microseconds) of fn.
double median_us_per_call(const std::function<void()>& fn, int inner, int repeats) {
  for (int i = 0; i < inner; ++i) fn();  // warm-up: caches, allocator, first-use statics
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / inner);
  }
  std::nth_element(samples.begin(), samples.begin() + repeats / 2, samples.end());
  return samples[static_cast<size_t>(repeats / 2)];
}

// Two loops timed in alternation, batch against batch, so that a change in the
// machine's speed hits both alike: the medians of each, of their difference and
// of their ratio (per call, microseconds). `after` runs after every batch and
// `around_fn` (when given) brackets each batch of fn; neither is timed.
struct Paired {
  double fn_us, baseline_us, excess_us, ratio;
};
Paired paired_us_per_call(const std::function<void()>& fn, const std::function<void()>& baseline, int inner,
                          int repeats, const std::function<void()>& after = [] {},
                          const std::function<void(bool begin)>& around_fn = [](bool) {}) {
  const auto batch = [&](const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    after();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / inner;
  };
  const auto fn_batch = [&] {
    around_fn(true);
    const double us = batch(fn);
    around_fn(false);
    return us;
  };
  batch(baseline);  // warm-up
  fn_batch();
  std::vector<double> fn_us, base_us, excess, ratio;
  for (int r = 0; r < repeats; ++r) {
    const double b = batch(baseline), f = fn_batch();
    base_us.push_back(b);
    fn_us.push_back(f);
    excess.push_back(f - b);
    ratio.push_back(f / b);
  }
  const auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(fn_us), median(base_us), median(excess), median(ratio)};
}

struct Entry {
  const char* name;
  const char* note;
  std::function<Result()> run;
  bool gpu = false;  // needs a CUDA device
  // Asked once a GPU is known to be there: empty when this GPU runs the entry, else why not.
  std::function<std::string()> unsupported = nullptr;
};

#if TS_HAVE_CUDA
// The same with a call after each batch that is not timed (a device synchronize).
double median_us_per_call(const std::function<void()>& fn, int inner, int repeats, const std::function<void()>& after) {
  for (int i = 0; i < inner; ++i) fn();
  after();
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    const auto t1 = std::chrono::steady_clock::now();
    after();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / inner);
  }
  std::nth_element(samples.begin(), samples.begin() + repeats / 2, samples.end());
  return samples[static_cast<size_t>(repeats / 2)];
}

// Median device time (milliseconds) of fn over `repeats` runs, each bracketed by
// CUDA events after the L2-emptying memset described above (bench/bench_timing.h).
using ts::bench::median_device_ms;

void sync() { ts::cuda::synchronize(); }

// Empty when cuda:0 (where the entries make their tensors) has what the rung needs (its rung row's
// compute capability), else why not: the entries of a rung forced by name ask it first.
std::function<std::string()> needs_of(const char* variant) {
  return [variant] {
    std::string why;
    return ts::gpu_meets_rung(variant, ts::kCUDA, &why) ? std::string() : why;
  };
}

// ts::mm (or addmm with a bias row) on n x n x n bf16 random data, in TFLOP/s.
// variant: a GEMM rung forced by name ("mm/cuda/wgmma"), or nullptr for the dispatcher's choice;
// schedule: the wgmma rung's, when not its own choice.
Result gemm_entry(const char* name, int64_t n, bool bias, const char* variant = nullptr,
                  ts::WgmmaSchedule schedule = ts::WgmmaSchedule::automatic) {
  const ts::Device gpu = ts::kCUDA;
  std::optional<ts::VariantOverride> use;
  if (variant != nullptr) use.emplace(variant);
  const ts::WgmmaScheduleOverride scheduled(schedule);
  const ts::Tensor a = ts::randn({n, n}, {ts::DType::bf16, gpu}), b = ts::randn({n, n}, {ts::DType::bf16, gpu});
  const ts::Tensor c = ts::randn({n}, {ts::DType::bf16, gpu});
  ts::Tensor sink;
  const double ms = median_device_ms([&] { sink = bias ? ts::addmm(c, a, b) : ts::mm(a, b); }, 3, 21);
  return Result{name, 2.0 * n * n * n / (ms * 1e-3) / 1e12, "TFLOP/s", ""};
}

// One forward of tutorial 03's MLP ([64, 128, 768] -> 3072, bf16) on `path`, device us;
// schedule: the wgmma GeGLU GEMM's (the epilogue path), when not its own choice.
Result mlp_entry(const char* name, ts::nn::MlpPath path, ts::WgmmaSchedule schedule = ts::WgmmaSchedule::automatic) {
  const ts::Device gpu = ts::kCUDA;
  ts::manual_seed(0);
  const ts::nn::GeGLUMLP mlp(768, 3072, path, {ts::DType::bf16, gpu});
  const ts::Tensor x = ts::randn({64, 128, 768}, {ts::DType::bf16, gpu});
  const ts::WgmmaScheduleOverride scheduled(schedule);
  ts::Tensor sink;
  const double ms = median_device_ms([&] { sink = mlp.forward(x); }, 3, 51);
  return Result{name, ms * 1e3, "us", ""};
}

// A step (made by `make_step` when the entry runs) replayed from a CUDA graph against the same step run
// op by op, device time per step as everywhere here (CUDA events, L2 emptied first), measured in the
// same run: what a replay costs the GPU, which launch gaps aside should be nothing.
void add_replay_entry(std::vector<Entry>& list, const char* name, const char* note,
                      std::function<std::function<void()>()> make_step) {
  list.push_back({name, note,
                  [name, make_step] {
                    const std::function<void()> step = make_step();
                    step();  // the warm-up: first-use costs out of the capture
                    ts::cuda::Graph graph;
                    {
                      ts::cuda::GraphCapture capture(graph);
                      step();
                    }
                    const double eager_ms = median_device_ms(step, 3, 21);
                    const double replay_ms = median_device_ms([&] { graph.replay(); }, 3, 21);
                    const std::string n(name);
                    return Result{n, replay_ms * 1e3, "us", "",
                                  {{n + "_eager", eager_ms * 1e3, "us", ""}, {n + "_ratio", replay_ms / eager_ms, "x", ""}}};
                  },
                  true});
}

void add_gpu_entries(std::vector<Entry>& list) {
  const ts::Device gpu = ts::kCUDA;
  list.push_back({"cuda/raw_launch", "an empty kernel <<<1,1>>>, CPU side per launch; the floor (3.4-3.6 us on our H200)",
                  [] {
                    ts::cuda::set_device(0);
                    const double us = median_us_per_call([] { ts::bench::launch_empty_kernel(); }, 2000, 51, sync);
                    return Result{"cuda/raw_launch", us, "us", ""};
                  },
                  true});
  // The same loops while the profiler records CPU and CUDA activity (CUPTI's kernel, runtime,
  // driver and correlation records): what recording costs a launch, and what it costs an op.
  list.push_back({"cuda/raw_launch_cupti", "cuda/raw_launch while CUPTI records (4.3-5.8 us on our H200)",
                  [] {
                    ts::cuda::set_device(0);
                    ts::profiler::ProfilerConfig config;
                    config.activities = {ts::profiler::Activity::CPU, ts::profiler::Activity::CUDA};
                    ts::profiler::Profiler profiler(config);
                    profiler.start();
                    const double us = median_us_per_call([] { ts::bench::launch_empty_kernel(); }, 2000, 51, sync);
                    profiler.stop();
                    return Result{"cuda/raw_launch_cupti", us, "us", ""};
                  },
                  true});
  // ts::add against the empty kernel in the same run (alternating batches): what an op costs
  // above a bare launch, with and without the profiler recording CPU and CUDA activity.
  list.push_back({"profiler/cuda/add_1elem_profiled",
                  "ts::add of 1-element bf16 while recording CPU + CUDA (PyTorch: 11.7 us); _excess: above "
                  "raw_launch_cupti in the same run, target <= 1.0 us",
                  [gpu] {
                    const ts::Tensor a = ts::randn({1}, {ts::DType::bf16, gpu}), b = ts::randn({1}, {ts::DType::bf16, gpu});
                    ts::Tensor sink;
                    ts::profiler::ProfilerConfig config;
                    config.activities = {ts::profiler::Activity::CPU, ts::profiler::Activity::CUDA};
                    ts::profiler::Profiler profiler(config);
                    profiler.start();
                    const Paired p = paired_us_per_call([&] { sink = ts::add(a, b); },
                                                        [] { ts::bench::launch_empty_kernel(); }, 1000, 31, sync);
                    profiler.stop();
                    return Result{"profiler/cuda/add_1elem_profiled", p.fn_us, "us", "",
                                  {{"profiler/cuda/add_1elem_profiled_excess", p.excess_us, "us", ""}}};
                  },
                  true});
  list.push_back({"dispatch/cuda/add_1elem",
                  "ts::add of 1-element bf16 tensors, CPU side; _ratio: over raw_launch in the same run, target <= 1.15",
                  [gpu] {
                    const ts::Tensor a = ts::randn({1}, {ts::DType::bf16, gpu}), b = ts::randn({1}, {ts::DType::bf16, gpu});
                    ts::Tensor sink;
                    const Paired p = paired_us_per_call([&] { sink = ts::add(a, b); },
                                                        [] { ts::bench::launch_empty_kernel(); }, 2000, 51, sync);
                    return Result{"dispatch/cuda/add_1elem", p.fn_us, "us", "",
                                  {{"dispatch/cuda/add_1elem_ratio", p.ratio, "x", ""}}};
                  },
                  true});
  // Part 1's step at 64 (add(matmul(x, w), b), bf16) replayed from a CUDA graph against the same step
  // run eagerly, in alternating batches of one run: the host's time per step, which is the step's time
  // when the GPU waits on the host (overhead-bound).
  list.push_back({"graph/cuda/part1_64_replay",
                  "one replay of part 1's step at 64 captured in a CUDA graph, CPU side per step (target <= 10 us); "
                  "_eager: the step run op by op in the same run; _ratio: replay over eager",
                  [gpu] {
                    const ts::Options on_gpu{ts::DType::bf16, gpu};
                    const ts::Tensor x = ts::randn({64, 64}, on_gpu), w = ts::randn({64, 64}, on_gpu);
                    const ts::Tensor b = ts::randn({64}, on_gpu);
                    ts::Tensor sink = ts::add(ts::matmul(x, w), b);  // the warm-up
                    ts::cuda::Graph graph;
                    {
                      ts::cuda::GraphCapture capture(graph);
                      sink = ts::add(ts::matmul(x, w), b);
                    }
                    const Paired p = paired_us_per_call([&] { graph.replay(); },
                                                        [&] { sink = ts::add(ts::matmul(x, w), b); }, 1000, 31, sync);
                    return Result{"graph/cuda/part1_64_replay", p.fn_us, "us", "",
                                  {{"graph/cuda/part1_64_replay_eager", p.baseline_us, "us", ""},
                                   {"graph/cuda/part1_64_replay_ratio", p.ratio, "x", ""}}};
                  },
                  true});
  // The same while the profiler records CPU and CUDA activity: the replay is one op, its cudaGraphLaunch
  // and its kernels (the captured ops are added when the profiler stops), the eager step three ops and
  // their launches.
  list.push_back({"graph/cuda/part1_64_replay_profiled",
                  "graph/cuda/part1_64_replay while recording CPU + CUDA, CPU side per step (target <= 10 us); "
                  "_eager, _ratio as above",
                  [gpu] {
                    const ts::Options on_gpu{ts::DType::bf16, gpu};
                    const ts::Tensor x = ts::randn({64, 64}, on_gpu), w = ts::randn({64, 64}, on_gpu);
                    const ts::Tensor b = ts::randn({64}, on_gpu);
                    ts::Tensor sink = ts::add(ts::matmul(x, w), b);
                    ts::cuda::Graph graph;
                    {
                      ts::cuda::GraphCapture capture(graph);
                      sink = ts::add(ts::matmul(x, w), b);
                    }
                    ts::profiler::ProfilerConfig config;
                    config.activities = {ts::profiler::Activity::CPU, ts::profiler::Activity::CUDA};
                    ts::profiler::Profiler profiler(config);
                    profiler.start();
                    const Paired p = paired_us_per_call([&] { graph.replay(); },
                                                        [&] { sink = ts::add(ts::matmul(x, w), b); }, 200, 31, sync);
                    profiler.stop();
                    return Result{"graph/cuda/part1_64_replay_profiled", p.fn_us, "us", "",
                                  {{"graph/cuda/part1_64_replay_profiled_eager", p.baseline_us, "us", ""},
                                   {"graph/cuda/part1_64_replay_profiled_ratio", p.ratio, "x", ""}}};
                  },
                  true});
  add_replay_entry(list, "graph/cuda/part1_4096_replay",
                   "device us of one replay of part 1's step at 4096 (compute-bound); _eager: the step op by op",
                   [gpu] {
                     const ts::Options on_gpu{ts::DType::bf16, gpu};
                     auto x = ts::randn({4096, 4096}, on_gpu), w = ts::randn({4096, 4096}, on_gpu);
                     auto b = ts::randn({4096}, on_gpu);
                     return std::function<void()>([x, w, b] { (void)ts::add(ts::matmul(x, w), b); });
                   });
  add_replay_entry(list, "graph/cuda/mlp_replay",
                   "device us of one replay of tutorial 03's MLP forward (eager path, [64,128,768] -> 3072); _eager",
                   [gpu] {
                     ts::manual_seed(0);
                     auto mlp = std::make_shared<ts::nn::GeGLUMLP>(768, 3072, ts::nn::MlpPath::eager,
                                                                   ts::Options{ts::DType::bf16, gpu});
                     auto x = ts::randn({64, 128, 768}, {ts::DType::bf16, gpu});
                     return std::function<void()>([mlp, x] { (void)mlp->forward(x); });
                   });
  list.push_back({"dispatch/cuda/view_t", "ts::t of a cuda tensor (metadata only); target <= 0.15 us",
                  [gpu] {
                    const ts::Tensor x = ts::randn({64, 32}, {ts::DType::bf16, gpu});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::t(x); }, 10000, 51);
                    return Result{"dispatch/cuda/view_t", us, "us", ""};
                  },
                  true});
  list.push_back({"gemm/bf16/8192", "ts::mm 8192^3 bf16, CUDA events, median; target >= 0.97x torch.mm",
                  [] { return gemm_entry("gemm/bf16/8192", 8192, false); }, true});
  list.push_back({"gemm/bf16/8192_addmm_bias", "ts::addmm(bias[8192], a, b): the bias in the epilogue, same speed",
                  [] { return gemm_entry("gemm/bf16/8192_addmm_bias", 8192, true); }, true});
  list.push_back({"gemm/bf16/4096", "ts::mm 4096^3 bf16, CUDA events, median",
                  [] { return gemm_entry("gemm/bf16/4096", 4096, false); }, true});
  // Our own tensor-core rungs beside the library (the side-by-side compares them with torch.mm).
  list.push_back({"gemm/bf16/8192_wgmma", "mm/cuda/wgmma 8192^3 bf16 (our TMA + wgmma kernel); target >= 0.90x torch.mm",
                  [] { return gemm_entry("gemm/bf16/8192_wgmma", 8192, false, "mm/cuda/wgmma"); }, true,
                  needs_of("mm/cuda/wgmma")});
  list.push_back({"gemm/bf16/4096_wgmma", "mm/cuda/wgmma 4096^3 bf16; target >= 0.85x torch.mm",
                  [] { return gemm_entry("gemm/bf16/4096_wgmma", 4096, false, "mm/cuda/wgmma"); }, true,
                  needs_of("mm/cuda/wgmma")});
  list.push_back({"gemm/bf16/8192_addmm_bias_wgmma", "addmm/cuda/wgmma 8192^3 bf16, the bias row in its epilogue",
                  [] { return gemm_entry("gemm/bf16/8192_addmm_bias_wgmma", 8192, true, "addmm/cuda/wgmma"); }, true,
                  needs_of("addmm/cuda/wgmma")});
  // The wgmma rung's two schedules by name, in the same run (the entries above take its own choice).
  for (const auto& [name, n, bias, schedule] :
       {std::tuple{"gemm/bf16/8192_wgmma_cooperative", 8192, false, ts::WgmmaSchedule::cooperative},
        std::tuple{"gemm/bf16/8192_wgmma_pingpong", 8192, false, ts::WgmmaSchedule::pingpong},
        std::tuple{"gemm/bf16/4096_wgmma_cooperative", 4096, false, ts::WgmmaSchedule::cooperative},
        std::tuple{"gemm/bf16/4096_wgmma_pingpong", 4096, false, ts::WgmmaSchedule::pingpong},
        std::tuple{"gemm/bf16/8192_addmm_bias_wgmma_cooperative", 8192, true, ts::WgmmaSchedule::cooperative},
        std::tuple{"gemm/bf16/8192_addmm_bias_wgmma_pingpong", 8192, true, ts::WgmmaSchedule::pingpong}}) {
    const char* variant = bias ? "addmm/cuda/wgmma" : "mm/cuda/wgmma";
    list.push_back({name, "as the entry without the suffix, under the wgmma schedule it names",
                    [name, n, bias, variant, schedule] { return gemm_entry(name, n, bias, variant, schedule); }, true,
                    needs_of(variant)});
  }
  list.push_back({"gemm/bf16/8192_mma", "mm/cuda/mma 8192^3 bf16 (mma.sync + ldmatrix + cp.async)",
                  [] { return gemm_entry("gemm/bf16/8192_mma", 8192, false, "mm/cuda/mma"); }, true,
                  needs_of("mm/cuda/mma")});
  list.push_back({"copy/cuda/d2d_1GiB", "clone of 1 GiB: bytes read + written per second (~4.3 TB/s measured)",
                  [gpu] {
                    const ts::Tensor x = ts::empty({int64_t{1} << 29}, {ts::DType::bf16, gpu});
                    ts::Tensor y = ts::empty_like(x);
                    const double ms = median_device_ms([&] { ts::copy_(y, x); }, 3, 21);
                    return Result{"copy/cuda/d2d_1GiB", 2.0 * (1 << 30) / (ms * 1e-3) / 1e9, "GB/s", ""};
                  },
                  true});
  list.push_back({"add/cuda/bf16_64M", "ts::add of two 64M-element bf16 tensors (the vectorized path), GB/s",
                  [gpu] {
                    const int64_t n = int64_t{1} << 26;
                    const ts::Tensor a = ts::randn({n}, {ts::DType::bf16, gpu}), b = ts::randn({n}, {ts::DType::bf16, gpu});
                    ts::Tensor sink;
                    const double ms = median_device_ms([&] { sink = ts::add(a, b); }, 3, 21);
                    return Result{"add/cuda/bf16_64M", 3.0 * 2 * n / (ms * 1e-3) / 1e9, "GB/s", ""};
                  },
                  true});
  // Part 2: the GeGLU middle alone, one forward of the tutorial's MLP on each path, one small Linear.
  list.push_back({"geglu/bf16/8192x3072", "ts::geglu, device us; target <= 40 (copy floor 35.6; PyTorch eager 76)",
                  [gpu] {
                    const ts::Tensor g = ts::randn({8192, 3072}, {ts::DType::bf16, gpu});
                    const ts::Tensor u = ts::randn({8192, 3072}, {ts::DType::bf16, gpu});
                    ts::Tensor sink;
                    const double ms = median_device_ms([&] { sink = ts::geglu(g, u); }, 3, 51);
                    return Result{"geglu/bf16/8192x3072", ms * 1e3, "us", ""};
                  },
                  true});
  for (const ts::nn::MlpPath path :
       {ts::nn::MlpPath::eager, ts::nn::MlpPath::fused, ts::nn::MlpPath::merged, ts::nn::MlpPath::epilogue}) {
    static const char* const kNames[] = {"mlp/bf16/eager", "mlp/bf16/fused", "mlp/bf16/merged", "mlp/bf16/epilogue"};
    const char* name = kNames[static_cast<int>(path)];
    list.push_back({name, "one forward of tutorial 03's MLP [64,128,768] -> 3072, device us (PyTorch eager 266)",
                    [path, name] { return mlp_entry(name, path); }, true});
  }
  for (const auto& [name, schedule] : {std::pair{"mlp/bf16/epilogue_cooperative", ts::WgmmaSchedule::cooperative},
                                       std::pair{"mlp/bf16/epilogue_pingpong", ts::WgmmaSchedule::pingpong}}) {
    list.push_back({name, "mlp/bf16/epilogue with the wgmma GeGLU GEMM under the schedule it names, device us",
                    [name, schedule] { return mlp_entry(name, ts::nn::MlpPath::epilogue, schedule); }, true,
                    needs_of("linear_geglu/cuda/wgmma")});
  }
  list.push_back({"linear/bf16/1024x32x64", "nn::Linear(32, 64, bias) on [1024, 32]: one addmm kernel, device us",
                  [gpu] {
                    ts::manual_seed(0);
                    const ts::nn::Linear linear(32, 64, /*bias=*/true, {ts::DType::bf16, gpu});
                    const ts::Tensor x = ts::randn({1024, 32}, {ts::DType::bf16, gpu});
                    ts::Tensor sink;
                    const double ms = median_device_ms([&] { sink = linear.forward(x); }, 3, 51);
                    return Result{"linear/bf16/1024x32x64", ms * 1e3, "us", ""};
                  },
                  true});
}

// Part 3: one forward of tutorial 04's attention layer (nn::CausalSelfAttention) per path, bf16,
// q, k, v contiguous [B, H, S, D] drawn with seed 1. FLOPs count the two products, 4*B*H*S*S*D,
// halved when causal (the flash-attention papers' convention, which PyTorch's benchmarks follow).
// Device time as everywhere here: CUDA events around one forward after the L2-emptying memset.
struct AttnShape {
  int64_t B, H, S, D;
  bool causal;
  std::string name() const { return fmt::format("B{}H{}S{}D{}{}", B, H, S, D, causal ? "" : "_noncausal"); }
  double flops() const { return 4.0 * B * H * S * S * D / (causal ? 2 : 1); }
};

// q, k, v of `shape`, bf16 on the GPU, drawn with seed 1: every attention entry's inputs.
struct AttnInputs {
  ts::Tensor q, k, v;
};
AttnInputs attention_inputs(const AttnShape& shape) {
  const ts::Options opt{ts::DType::bf16, ts::kCUDA};
  ts::manual_seed(1);
  AttnInputs in;
  in.q = ts::randn({shape.B, shape.H, shape.S, shape.D}, opt);
  in.k = ts::randn({shape.B, shape.H, shape.S, shape.D}, opt);
  in.v = ts::randn({shape.B, shape.H, shape.S, shape.D}, opt);
  return in;
}

// One forward's device time `ms` as an entry reports it. `per_forward_us`: device us per forward
// (and TFLOP/s beside it); else TFLOP/s (and us).
Result attention_result(const std::string& name, const AttnShape& shape, double ms, bool per_forward_us) {
  const double us = ms * 1e3, tflops = shape.flops() / (ms * 1e-3) / 1e12;
  Result r{name, us, "us", ""};
  Result other{name + "_tflops", tflops, "TFLOP/s", ""};
  if (!per_forward_us) {
    r = Result{name, tflops, "TFLOP/s", ""};
    other = Result{name + "_us", us, "us", ""};
  }
  r.also.push_back(other);
  return r;
}

void add_attention_entry(std::vector<Entry>& list, ts::nn::AttentionPath path, AttnShape shape, bool per_forward_us) {
  const std::string name =
      fmt::format("attn/bf16/{}/{}", shape.name(), ts::nn::attention_path_name(path));
  static std::deque<std::string> names;  // Entry holds a const char*: the strings stay put in a deque
  names.push_back(name);
  const char* note = per_forward_us ? "one forward of tutorial 04's layer, device us (_tflops beside it)"
                                    : "one forward of tutorial 04's layer, TFLOP/s (_us beside it)";
  const char* variant = ts::nn::attention_variant_name(path);  // the fused paths force an sdpa rung
  std::function<std::string()> unsupported = nullptr;
  if (variant != nullptr) unsupported = needs_of(variant);
  list.push_back({names.back().c_str(), note,
                  [path, shape, per_forward_us, name] {
                    const AttnInputs in = attention_inputs(shape);
                    const ts::nn::CausalSelfAttention attn(path, shape.S, ts::kCUDA, shape.causal);
                    ts::Tensor sink;
                    const double ms = median_device_ms([&] { sink = attn.forward(in.q, in.k, in.v); }, 3, 21);
                    return attention_result(name, shape, ms, per_forward_us);
                  },
                  true, unsupported});
}

// The way from flash_v2 to flash_v3 (ts::FlashV3Step): flash_v3's kernel with only its first
// techniques, called through its launcher (the steps are no rung and no layer path) on the same
// inputs as add_attention_entry's, timed and counted the same way. The last step is flash_v3
// itself, whose entry add_attention_entry makes.
void add_flash_v3_step_entries(std::vector<Entry>& list, AttnShape shape, bool per_forward_us) {
  static std::deque<std::string> names;  // Entry holds a const char*: the strings stay put in a deque
  for (const ts::FlashV3Step step : ts::kFlashV3Steps) {
    if (step == ts::FlashV3Step::pingpong) continue;  // = flash_v3
    const std::string name = fmt::format("attn/bf16/{}/flash_v3_{}", shape.name(), ts::flash_v3_step_name(step));
    names.push_back(name);
    const char* note = per_forward_us ? "flash_v3's kernel up to this step, device us (_tflops beside it)"
                                      : "flash_v3's kernel up to this step, TFLOP/s (_us beside it)";
    list.push_back({names.back().c_str(), note,
                    [step, shape, per_forward_us, name] {
                      const AttnInputs in = attention_inputs(shape);
                      ts::Tensor out = ts::empty_like(in.q);
                      const ts::SdpaAttrs attrs{shape.causal, 0};
                      const double ms = median_device_ms(
                          [&] {
                            ts::sdpa_cuda_flash_v3_step(in.q, in.k, in.v, attrs, out, step);
                            ts::cuda::check_launch(name.c_str());  // as dispatch does after a rung
                          },
                          3, 21);
                      return attention_result(name, shape, ms, per_forward_us);
                    },
                    true, needs_of("scaled_dot_product_attention/cuda/flash_v3")});
  }
}

void add_attention_entries(std::vector<Entry>& list) {
  using ts::nn::AttentionPath;
  // Tutorial 04's shape: every path, in us per forward, and the steps from flash_v2 to flash_v3.
  for (AttentionPath path : {AttentionPath::naive, AttentionPath::inplace, AttentionPath::math,
                             AttentionPath::flash_v1, AttentionPath::flash_v2})
    add_attention_entry(list, path, {4, 16, 1024, 64, true}, true);
  add_flash_v3_step_entries(list, {4, 16, 1024, 64, true}, true);
  add_attention_entry(list, AttentionPath::flash_v3, {4, 16, 1024, 64, true}, true);
  // The long-sequence shapes of the flash-attention benchmarks (B*S = 16k tokens, H*D = 1024 or
  // 2048): the ladder math -> flash_v1 -> flash_v2 -> (flash_v3's steps) -> flash_v3, in TFLOP/s;
  // and flash_v2, the steps and flash_v3 without the mask.
  for (const AttnShape shape : {AttnShape{4, 16, 4096, 64, true}, AttnShape{2, 16, 4096, 128, true},
                                AttnShape{2, 16, 4096, 128, false}}) {
    if (shape.causal)
      for (AttentionPath path : {AttentionPath::math, AttentionPath::flash_v1})
        add_attention_entry(list, path, shape, false);
    add_attention_entry(list, AttentionPath::flash_v2, shape, false);
    add_flash_v3_step_entries(list, shape, false);
    add_attention_entry(list, AttentionPath::flash_v3, shape, false);
  }
  // The other head dims (flash_v2 takes 96, flash_v3 96, 192 and 256; the steps exist for 64 and
  // 128 only) at S = 4096, and a sequence past 16k at D = 128; both masks.
  for (const bool causal : {true, false}) {
    for (const AttnShape shape : {AttnShape{2, 16, 4096, 96, causal}, AttnShape{2, 16, 4096, 192, causal},
                                  AttnShape{2, 8, 4096, 256, causal}, AttnShape{1, 16, 32768, 128, causal}}) {
      if (shape.D == 96 || shape.S == 32768) add_attention_entry(list, AttentionPath::flash_v2, shape, false);
      add_attention_entry(list, AttentionPath::flash_v3, shape, false);
    }
  }
  add_replay_entry(list, "graph/cuda/attention_replay",
                   "device us of one replay of tutorial 04's layer (naive path, B4H16S1024D64 causal); _eager",
                   [] {
                     const AttnShape shape{4, 16, 1024, 64, true};
                     auto in = std::make_shared<AttnInputs>(attention_inputs(shape));
                     auto attn = std::make_shared<ts::nn::CausalSelfAttention>(ts::nn::AttentionPath::naive, shape.S,
                                                                               ts::kCUDA, shape.causal);
                     return std::function<void()>([in, attn] { (void)attn->forward(in->q, in->k, in->v); });
                   });
  // The host's side of a Hopper rung: flash_v3 needs three TMA descriptors per forward, which the
  // thread's cache hands back once encoded (ops/hopper_tensor_map.h); flash_v2 needs none.
  // Batches of 20 forwards, short enough that the launch queue never fills, a synchronize after
  // each.
  list.push_back({"attn/cuda/flash_v3_host_us",
                  "CPU side per forward of tutorial 04's layer, flash_v3 path (B4H16S1024D64 causal); _flash_v2: "
                  "the same, flash_v2 path, in the same run; _ratio: v3 over v2, target <= 1.0; "
                  "_encodes_per_call: the driver's descriptor encodes per timed forward (cache misses)",
                  [] {
                    const AttnShape shape{4, 16, 1024, 64, true};
                    const AttnInputs in = attention_inputs(shape);
                    const ts::nn::CausalSelfAttention v3(ts::nn::AttentionPath::flash_v3, shape.S, ts::kCUDA, true);
                    const ts::nn::CausalSelfAttention v2(ts::nn::AttentionPath::flash_v2, shape.S, ts::kCUDA, true);
                    ts::Tensor sink;
                    int64_t v3_calls = 0;
                    const auto forward_v3 = [&] {
                      sink = v3.forward(in.q, in.k, in.v);
                      ++v3_calls;
                    };
                    forward_v3();  // the first call encodes its maps: not in the count below
                    const int64_t encodes = ts::hopper::tensor_map_encodes();
                    v3_calls = 0;
                    const Paired p = paired_us_per_call(forward_v3, [&] { sink = v2.forward(in.q, in.k, in.v); }, 20,
                                                        51, sync);
                    const double encodes_per_call = static_cast<double>(ts::hopper::tensor_map_encodes() - encodes) /
                                                    static_cast<double>(std::max<int64_t>(v3_calls, 1));
                    return Result{"attn/cuda/flash_v3_host_us", p.fn_us, "us", "",
                                  {{"attn/cuda/flash_v3_host_us_flash_v2", p.baseline_us, "us", ""},
                                   {"attn/cuda/flash_v3_host_us_ratio", p.ratio, "x", ""},
                                   {"attn/cuda/flash_v3_host_us_encodes_per_call", encodes_per_call, "count", ""}}};
                  },
                  true, needs_of("scaled_dot_product_attention/cuda/flash_v3")});
  // Where flash_v3_host_us's excess over flash_v2 goes, part by part, in the same run at the same
  // shape: the rungs' launchers called directly (sdpa_flash_v3 against sdpa_flash_v2: the output
  // allocated, the problem checked, the maps looked up, the launch; no dispatch, no supports()),
  // their supports() checks, and the three tensor-map lookups of a flash_v3 call (spec and cache
  // hit) on their own.
  list.push_back({"attn/cuda/flash_v3_host_parts",
                  "CPU side per call at tutorial 04's shape (B4H16S1024D64 causal), excess of flash_v3 over "
                  "flash_v2: the launchers sdpa_flash_v3 and sdpa_flash_v2 called directly (_launcher_v3, "
                  "_launcher_v2 beside it); _supports_excess: sdpa_cuda_flash_v3_supports over v2's; _maps: the "
                  "three map specs and cache hits of one flash_v3 call",
                  [] {
                    const AttnShape shape{4, 16, 1024, 64, true};
                    const AttnInputs in = attention_inputs(shape);
                    const ts::SdpaAttrs attrs{true, 0};
                    ts::Tensor out_v3, out_v2;
                    const auto v3 = [&] { ts::sdpa_flash_v3(in.q, in.k, in.v, attrs, out_v3); };
                    const auto v2 = [&] { ts::sdpa_flash_v2(in.q, in.k, in.v, attrs, out_v2); };
                    const Paired launcher = paired_us_per_call(v3, v2, 20, 51, sync);
                    bool ok = true;
                    const Paired supports = paired_us_per_call(
                        [&] { ok &= ts::sdpa_cuda_flash_v3_supports(in.q, in.k, in.v, attrs, nullptr); },
                        [&] { ok &= ts::sdpa_cuda_flash_v2_supports(in.q, in.k, in.v, attrs, nullptr); }, 1000, 51);
                    TS_CHECK(ok, "flash_v3_host_parts: a rung refused tutorial 04's shape");
                    // The specs as flash_v3 makes them at this shape: two consumers (128 queries, 1024
                    // is not a multiple of 192), key tiles of 128, boxes 64 columns wide.
                    const auto spec = [](const ts::Tensor& x, int box_rows, const char* what) {
                      return ts::hopper::tensor_map_spec_16bit_4d(
                          x.data_ptr(), x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], x.strides()[0],
                          x.strides()[1], x.strides()[2], box_rows, 64, what);
                    };
                    CUtensorMap sink{};
                    const double maps = median_us_per_call(
                        [&] {
                          sink = ts::hopper::make_tensor_map(spec(in.q, 128, "q"));
                          sink = ts::hopper::make_tensor_map(spec(in.k, 128, "k"));
                          sink = ts::hopper::make_tensor_map(spec(in.v, 128, "v"));
                        },
                        1000, 51);
                    return Result{"attn/cuda/flash_v3_host_parts", launcher.excess_us, "us", "",
                                  {{"attn/cuda/flash_v3_host_parts_launcher_v3", launcher.fn_us, "us", ""},
                                   {"attn/cuda/flash_v3_host_parts_launcher_v2", launcher.baseline_us, "us", ""},
                                   {"attn/cuda/flash_v3_host_parts_supports_excess", supports.excess_us, "us", ""},
                                   {"attn/cuda/flash_v3_host_parts_maps", maps, "us", ""}}};
                  },
                  true, needs_of("scaled_dot_product_attention/cuda/flash_v3")});
  // What of flash_v3_host_us is the launch itself: an empty kernel launched as flash_v3 launches
  // tutorial 04's layer (a block per SM, 384 threads, the 148624 bytes of dynamic shared memory of
  // its D = 64 128 x 128 config, the three tensor maps by value and the problem), against the
  // <<<1,1>>> launch in alternating batches; and the same launch with a pointer to the maps
  // instead, with one int of arguments, and with the maps and the problem as four parameters (as
  // flash_v3's kernels take them) against one struct; and an empty kernel launched as flash_v2
  // launches the same layer, against the <<<1,1>>> launch and against the one shaped like
  // flash_v3's.
  list.push_back({"cuda/launch_like_flash_v3",
                  "an empty kernel launched with flash_v3's grid, block, shared memory and arguments, CPU side per "
                  "launch (448 bytes of arguments: three tensor maps by value and the problem); _excess: over "
                  "cuda/raw_launch in the same run; _maps_pointer_excess: the same launch with a pointer to the "
                  "maps instead (72 bytes); _one_int_excess: with a 4-byte argument; _four_parameters_excess: the "
                  "same 448 bytes as flash_v3's four parameters (three maps, the problem) over one struct of them; "
                  "_flash_v2_like_excess: an empty "
                  "kernel launched with flash_v2's grid, block, shared memory and argument at that shape, over "
                  "cuda/raw_launch; _over_flash_v2_like: the launch shaped like flash_v3's over that one",
                  [] {
                    using ts::bench::LaunchArguments;
                    ts::cuda::set_device(0);
                    const int blocks = ts::hopper::properties(0).multiprocessors;
                    const auto like = [blocks](LaunchArguments arguments) {
                      return [blocks, arguments] { ts::bench::launch_empty_like_flash_v3(blocks, 384, 148624, arguments); };
                    };
                    const auto raw = [] { ts::bench::launch_empty_kernel(); };
                    const Paired full = paired_us_per_call(like(LaunchArguments::like_flash_v3), raw, 20, 51, sync);
                    const Paired pointer = paired_us_per_call(like(LaunchArguments::maps_pointer), raw, 20, 51, sync);
                    const Paired one_int = paired_us_per_call(like(LaunchArguments::one_int), raw, 20, 51, sync);
                    const Paired four = paired_us_per_call(like(LaunchArguments::four_parameters),
                                                           like(LaunchArguments::like_flash_v3), 20, 51, sync);
                    // flash_v2 at B4 H16 S1024 D64: 8 blocks of 128 queries per (batch, head), 256
                    // threads, (128 + 4 * 64) rows of 64 bf16 of shared memory.
                    static_assert(sizeof(ts::FlashProblem) == ts::bench::kLikeFlashV2ArgBytes);
                    const auto like_v2 = [] { ts::bench::launch_empty_like_flash_v2(8 * 4 * 16, 256, 384 * 64 * 2); };
                    const Paired v2 = paired_us_per_call(like_v2, raw, 20, 51, sync);
                    const Paired v3_over_v2 =
                        paired_us_per_call(like(LaunchArguments::like_flash_v3), like_v2, 20, 51, sync);
                    return Result{"cuda/launch_like_flash_v3", full.fn_us, "us", "",
                                  {{"cuda/launch_like_flash_v3_raw_launch", full.baseline_us, "us", ""},
                                   {"cuda/launch_like_flash_v3_excess", full.excess_us, "us", ""},
                                   {"cuda/launch_like_flash_v3_maps_pointer_excess", pointer.excess_us, "us", ""},
                                   {"cuda/launch_like_flash_v3_one_int_excess", one_int.excess_us, "us", ""},
                                   {"cuda/launch_like_flash_v3_four_parameters_excess", four.excess_us, "us", ""},
                                   {"cuda/launch_like_flash_v3_flash_v2_like_excess", v2.excess_us, "us", ""},
                                   {"cuda/launch_like_flash_v3_over_flash_v2_like", v3_over_v2.excess_us, "us", ""}}};
                  },
                  true, needs_of("scaled_dot_product_attention/cuda/flash_v3")});
}
#endif  // TS_HAVE_CUDA

// The profiler's own costs: per op while it records, and the work after a 20,000-event profile.
ts::profiler::Recording profile_20k_events() {
  // 4,000 x { record_function, matmul -> mm, add, t }: 20,000 events with their shapes.
  const ts::Tensor x = ts::randn({8, 8}), w = ts::randn({8, 8}), b = ts::randn({8});
  ts::profiler::ProfilerConfig config;
  config.record_shapes = true;
  ts::profiler::Profiler profiler(config);
  profiler.start();
  for (int i = 0; i < 4000; ++i) {
    ts::profiler::RecordFunction scope("step");
    ts::add(ts::matmul(x, w), b);
    ts::t(w);
  }
  profiler.stop();
  return profiler.recording();
}

void add_profiler_entries(std::vector<Entry>& list) {
  // Batches with the profiler recording against batches without, in the same run.
  list.push_back({"profiler/cpu/add_1elem_profiled",
                  "ts::add of 1-element f32 while recording; _excess: above the same loop unrecorded, in the same "
                  "run, target <= 0.5 us (PyTorch adds 5-8 us)",
                  [] {
                    const ts::Tensor a = ts::randn({1}), b = ts::randn({1});
                    ts::Tensor sink;
                    std::unique_ptr<ts::profiler::Profiler> profiler;
                    const auto add = [&] { sink = ts::add(a, b); };
                    const Paired p = paired_us_per_call(add, add, 10000, 51, [] {}, [&](bool begin) {
                      if (begin) {
                        profiler = std::make_unique<ts::profiler::Profiler>(ts::profiler::ProfilerConfig{});
                        profiler->start();
                      } else {
                        profiler->stop();
                      }
                    });
                    return Result{"profiler/cpu/add_1elem_profiled", p.fn_us, "us", "",
                                  {{"profiler/cpu/add_1elem_profiled_excess", p.excess_us, "us", ""}}};
                  }});
  list.push_back({"profiler/key_averages_20k", "key_averages + table of 20,000 events; target <= 50 ms (PyTorch: 3.7 s)",
                  [] {
                    const ts::profiler::Recording rec = profile_20k_events();
                    std::string table;
                    const double us = median_us_per_call(
                        [&] { table = ts::profiler::key_averages(rec).table("cpu_time_total"); }, 1, 11);
                    return Result{"profiler/key_averages_20k", us / 1000, "ms", ""};
                  }});
  list.push_back({"profiler/export_20k", "Chrome trace of 20,000 events; target <= 100 ms (PyTorch: 0.2 s, 27 MB)", [] {
                    const ts::profiler::Recording rec = profile_20k_events();
                    const std::string path = fmt::format("/tmp/ts_bench_export_{}.json", getpid());
                    const double us =
                        median_us_per_call([&] { ts::profiler::export_chrome_trace(rec, path); }, 1, 11);
                    std::remove(path.c_str());
                    return Result{"profiler/export_20k", us / 1000, "ms", ""};
                  }});
}

std::vector<Entry> entries() {
  std::vector<Entry> list;
  list.push_back({"dispatch/cpu/view_t", "target <= 0.15 us; PyTorch from Python: 1.2 us", [] {
                    const ts::Tensor x = ts::randn({64, 32});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::t(x); }, 10000, 51);
                    return Result{"dispatch/cpu/view_t", us, "us", ""};
                  }});
  list.push_back({"dispatch/cpu/add_1elem", "target <= 0.5 us; PyTorch from Python: ~4 us", [] {
                    const ts::Tensor a = ts::randn({1}), b = ts::randn({1});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::add(a, b); }, 10000, 51);
                    return Result{"dispatch/cpu/add_1elem", us, "us", ""};
                  }});
  list.push_back({"matmul/cpu/f32/1024", "ts::mm 1024^3 f32 through the best CPU rung", [] {
                    const ts::Tensor a = ts::randn({1024, 1024}), b = ts::randn({1024, 1024});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::mm(a, b); }, 1, 5);
                    return Result{"matmul/cpu/f32/1024", 2.0 * 1024 * 1024 * 1024 / (us * 1e-6) / 1e9, "GFLOP/s", ""};
                  }});
  add_profiler_entries(list);
#if TS_HAVE_CUDA
  add_gpu_entries(list);
  add_attention_entries(list);
#endif
  return list;
}

int main_impl(int argc, char** argv) {
  CLI::App app{"ts_bench: median per-op cost of tensorscope's hot paths"};
  std::string filter, json_path;
  bool list = false, gpu_only = false;
  app.add_option("--filter", filter, "run entries whose name contains this");
  app.add_option("--json", json_path, "also write one JSON object per line to this file");
  app.add_flag("--list", list, "list the entries and every registered variant");
  app.add_flag("--gpu", gpu_only, "run the GPU entries only");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("ts_bench: {} (--help lists the flags)\n", e.what());
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or a bad command line (one line on stderr)
  }

  const std::vector<Entry> all = entries();
  if (!ts::cuda::built_with_cuda())
    fmt::print("ts_bench: no GPU entries in this build ({})\n\n", ts::cuda::unavailable_reason());
  if (list) {
    for (const Entry& e : all) fmt::print("{:<40} {}\n", e.name, e.note);
    fmt::print("\nregistered variants:\n");
    for (const ts::Variant* v : ts::all_variants())
      fmt::print("  {:<44} rung {}  needs {:<4}  {}\n  {:<44} {}\n", v->name, v->rung, ts::gpu_needs_name(v->needs),
                 v->summary, "", v->source);  // the file of its code, under the rung's row
    if (!ts::cuda::built_with_cuda()) fmt::print("\n(no CUDA rungs: {})\n", ts::cuda::unavailable_reason());
    return 0;
  }

  // --json: the lines go to a temporary file beside it, which becomes the file at the end
  // (tensor/file_output.h); a byte lost on the way (a full disk) is a ts::Error there, and exit 1.
  std::optional<ts::FileOutput> json;
  if (!json_path.empty()) json.emplace(json_path, "--json " + json_path);
  fmt::print("{:<40} {:>12} {:<8}  {}\n", "entry", "median", "unit", "note");
  fmt::print("{:-<40} {:->12} {:-<8}  {:-<40}\n", "", "", "", "");
  for (const Entry& e : all) {
    if (!filter.empty() && std::string(e.name).find(filter) == std::string::npos) continue;
    if (gpu_only && !e.gpu) continue;
    if (e.gpu && !ts::cuda::is_available()) {
      fmt::print("{:<40} {:>12} {:<8}  skipped: {}\n", e.name, "-", "", ts::cuda::unavailable_reason());
      continue;
    }
    if (e.unsupported) {
      if (const std::string why = e.unsupported(); !why.empty()) {
        fmt::print("{:<40} {:>12} {:<8}  skipped: {}\n", e.name, "-", "", why);
        continue;
      }
    }
    const Result r = e.run();
    fmt::print("{:<40} {:>12.3f} {:<8}  {}\n", r.name, r.value, r.unit, e.note);
    for (const Result& more : r.also) fmt::print("{:<40} {:>12.3f} {:<8}\n", more.name, more.value, more.unit);
    if (json) {
      const auto line = [](const Result& x) {
        return fmt::format("{{\"name\": \"{}\", \"value\": {:.6g}, \"unit\": \"{}\"}}\n", x.name, x.value, x.unit);
      };
      json->write(line(r));
      for (const Result& more : r.also) json->write(line(more));
    }
  }
  if (json) json->commit();
  return 0;
}

}  // namespace

// A ts::Error (an unknown TS_VARIANT, a GPU that cannot run a forced rung) or any other exception
// becomes one line on stderr and exit status 1: nothing escapes main to abort the process.
int main(int argc, char** argv) {
  try {
    return main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "ts_bench: {}\n", e.what());
  } catch (...) {
    std::fflush(stdout);
    fmt::print(stderr, "ts_bench: unknown exception\n");
  }
  return 1;
}
