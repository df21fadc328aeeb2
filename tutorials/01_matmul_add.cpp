// tutorials/01_matmul_add.cpp: the series' part 1: profile fn(x, w, b) = add(matmul(x, w), b).
//
// The two artifacts of a profile: the table (what took time) and the trace
// (when, and why). The profiler runs the schedule wait=1, warmup=1, active=N:
// steps 0 and 1 are not recorded, ProfilerStep#2.. are (--schedule-wait 0
// --schedule-warmup 0 records from the very first call: the cold start). Each step is
//   ProfilerStep#N > matmul_add (a user annotation) > ts::matmul > ts::mm,
// then ts::add; with --batched the GEMM is ts::bmm, with --fused it is one
// ts::addmm whose epilogue adds b. b is a bias row [N] (Linear's case) or, with
// --bias matrix, a full [N, N] matrix (the series' case: addmm reads it as the
// GEMM's C). At size 64 the host-side cost of dispatching dominates
// (overhead-bound); at 4096 the GEMM does (compute-bound). After the table the
// run prints each recorded step's width; --unprofiled N then times N more steps
// with the profiler off, to set the profiler's own cost beside the step.
//
// Writes traces/01_matmul_add/<size>_<dtype>_<cold|warm>_<eager|fused>[_batched][_matrix][_<tag>].{json,txt}
// (relative to the current directory); open the .json in ui.perfetto.dev.
//
// Run: ./build/dev/tutorials/01_matmul_add [--size 64] [--dtype bf16|f16|f32] [--warmup 0]
//          [--batched] [--fused] [--bias row|matrix] [--active 3] [--schedule-wait 1] [--schedule-warmup 1]
//          [--activities cpu,cuda|cpu] [--unprofiled 0] [--device cpu|cuda] [--out-dir DIR] [--tag NAME]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "ops/ops.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tutorials/tutorial_support.h"

namespace {

namespace prof = ts::profiler;

constexpr int64_t kBatch = 4;  // --batched: x and w are [4, N, N]
constexpr int64_t kMaxSize = 16384;  // --size: a [16384, 16384] f32 matrix is 1 GiB, 8.8 TFLOP per GEMM

struct Flags : tutorial::CommonFlags {
  int64_t size = 64;
  bool batched = false;
  bool fused = false;
  std::string bias = "row";  // "row": b is [N]; "matrix": b is [N, N]
  int unprofiled = 0;        // steps timed with the profiler off, after the profile
  bool matrix_bias() const { return bias == "matrix"; }
};

void print_expectations(const Flags& f, const ts::Device& device) {
  const double flop = 2.0 * static_cast<double>(f.size) * static_cast<double>(f.size) * static_cast<double>(f.size) *
                      (f.batched ? kBatch : 1);
  const char* gemm = f.fused ? "ts::addmm" : f.batched ? "ts::bmm" : "ts::mm";
  fmt::print("Guess first, then look:\n");
  const int first = f.first_recorded_step();
  fmt::print("  - schedule wait={}, warmup={}, active={}: {}.\n"
             "    The table and the trace hold ProfilerStep#{}..#{} ({} calls of every row, folded as ProfilerStep*).\n",
             f.schedule_wait, f.schedule_warmup, f.active,
             first == 0   ? "every step is recorded, the first call too"
             : first == 1 ? "step 0 runs unrecorded"
             : first == 2 ? "steps 0 and 1 run unrecorded"
                          : fmt::format("steps 0..{} run unrecorded", first - 1),
             first, first + f.active - 1, f.active);
  if (f.fused && device.is_cpu()) {
    fmt::print("  - each step: ProfilerStep#N > matmul_add > ts::addmm. One op: ts::addmm starts the GEMM's f32\n"
               "    accumulator from b ({}) and sgemm adds the product to it (beta = 1), so there is no\n"
               "    ts::add row and no copy op before it.\n",
               f.matrix_bias() ? fmt::format("[{}, {}]", f.size, f.size) : fmt::format("the row [{}], broadcast", f.size));
  } else if (f.fused && !f.matrix_bias()) {
    fmt::print("  - each step: ProfilerStep#N > matmul_add > ts::addmm. One op: the bias row [{}] is added in the\n"
               "    GEMM's epilogue, so there is no ts::add row, no add kernel and no copy of the bias first.\n",
               f.size);
  } else if (f.fused) {
    fmt::print("  - each step: ProfilerStep#N > matmul_add > ts::addmm. One op: b [{}, {}] is the GEMM's C, read\n"
               "    from its own buffer while the result goes to the output (beta = 1): no add kernel, and no\n"
               "    Memcpy of b into the output first.\n",
               f.size, f.size);
  } else {
    fmt::print("  - each step: ProfilerStep#N > matmul_add > ts::matmul > {}, then ts::add. ts::matmul only\n"
               "    dispatches: its Self CPU is small, its CPU total holds {}.{}\n",
               gemm, gemm, f.batched ? " 3-D inputs take the bmm path." : "");
  }
  const std::string work = flop >= 1e9 ? fmt::format("{:.1f} GFLOP", flop / 1e9) : fmt::format("{:.2f} MFLOP", flop / 1e6);
  if (f.size <= 256 && device.is_cpu()) {
    fmt::print("  - one GEMM is {}: tiny. On the CPU its math takes microseconds, so the rows around {}\n"
               "    (matmul_add, ts::matmul{}) are a visible share of the step. On a GPU the same step is\n"
               "    overhead-bound: CPU time dwarfs CUDA time and the GPU sits idle.\n",
               work, gemm, f.fused ? "" : ", ts::add");
  } else if (f.size <= 256) {
    fmt::print("  - one GEMM is {}: tiny. Dispatch and bookkeeping on the host cost as much as the math\n"
               "    (overhead-bound); on a GPU, CPU time would dwarf CUDA time and the GPU would sit idle.\n",
               work);
  } else if (device.is_cpu()) {
    fmt::print("  - one GEMM is {}: the math dominates (compute-bound). On the CPU it runs inside {},\n"
               "    so its Self CPU is nearly all of the total.\n",
               work, gemm);
  } else {
    fmt::print("  - one GEMM is {}: the GEMM kernel dominates CUDA time (compute-bound) while {}'s\n"
               "    Self CPU stays a few microseconds: launching is cheap, waiting is not.\n",
               work, gemm);
  }
  std::string before;
  if (first == 0 && f.warmup == 0) {
    before = fmt::format("nothing ran before: ProfilerStep#0 holds the very first call, which pays the first-use\n"
                         "    costs ({}). Expect #0 to be by far the widest step.",
                         device.is_cuda() ? "the cuBLASLt handle and its workspace, the first heuristic query, loading\n"
                                            "    the kernels"
                                          : "OpenBLAS starting its threads, the first allocations");
  } else if (f.warmup > 0) {
    before = fmt::format("{} warm-up iteration{} paid the first-use costs before the window.", f.warmup,
                         f.warmup == 1 ? "" : "s");
  } else {
    before = fmt::format("no warm-up iterations, but the schedule's unrecorded step{} ({}) came first and paid the\n"
                         "    first-use costs (--schedule-wait 0 --schedule-warmup 0 records them).",
                         first == 1 ? "" : "s", first);
  }
  fmt::print("  - {}: {}\n    Are the recorded steps alike? Their widths are printed after the table.\n\n",
             f.temperature(), before);
}

// Largest error of out against a float64 reference, relative to the size of the terms
// (sum of |x*w| + |b|) so that one bound fits every dtype and size. Checks every
// element of small results and 512 scattered ones of large results. b is [N] or [N, N].
double worst_error(const ts::Tensor& x, const ts::Tensor& w, const ts::Tensor& b, const ts::Tensor& out, int64_t n,
                   int64_t batches) {
  const bool matrix = b.dim() == 2;
  const std::vector<float> xv = x.to_vector<float>(), wv = w.to_vector<float>(), bv = b.to_vector<float>();
  const std::vector<float> ov = out.to_vector<float>();
  const int64_t elements = batches * n * n;
  const int64_t checks = elements <= (1 << 18) ? elements : 512;
  double worst = 0;
  for (int64_t c = 0; c < checks; ++c) {
    const int64_t at = checks == elements ? c : (c * 2654435761LL) % elements;
    const int64_t batch = at / (n * n), i = (at / n) % n, j = at % n;
    double ref = bv[static_cast<size_t>(matrix ? i * n + j : j)], scale = std::abs(ref);
    for (int64_t k = 0; k < n; ++k) {
      const double term = static_cast<double>(xv[static_cast<size_t>((batch * n + i) * n + k)]) *
                          wv[static_cast<size_t>((batch * n + k) * n + j)];
      ref += term;
      scale += std::abs(term);
    }
    worst = std::max(worst, std::abs(ov[static_cast<size_t>(at)] - ref) / std::max(scale, 1e-30));
  }
  return worst;
}

// The same step with the profiler off: each step timed on the host after a synchronize (so the
// GPU's queue is empty and the time is the launches, as in an overhead-bound profiled step),
// the median printed beside the profiled step's CPU time.
template <typename Step>
void time_unprofiled(const Flags& f, const ts::Device& device, const tutorial::ProfiledRun& profiled, Step&& step) {
  std::vector<double> us;
  for (int i = 0; i < f.unprofiled; ++i) {
    if (device.is_cuda()) ts::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  if (device.is_cuda()) ts::cuda::synchronize();
  std::sort(us.begin(), us.end());
  const double median = us.size() % 2 == 1 ? us[us.size() / 2] : (us[us.size() / 2 - 1] + us[us.size() / 2]) / 2;
  const prof::KeyAverage* row = profiled.averages.find("ProfilerStep*");
  fmt::print("the same step with the profiler off: {:.3f} us on the host (median of {} steps, min {:.3f}); "
             "profiled{}: {:.3f} us (ProfilerStep* CPU time avg)\n",
             median, us.size(), us.front(),
             !device.is_cuda() ? "" : f.cuda_activity() ? " (CPU and CUDA recorded)" : " (CPU only recorded: no CUPTI)",
             row != nullptr ? row->cpu_time_us() : 0.0);
}

int run(Flags f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "01_matmul_add");
  tutorial::choose_dtype(f, device);  // bf16, or f16 on a GPU without bf16 tensor cores
  tutorial::prepare_out_dir(f.out_dir);
  TS_CHECK(!(f.fused && f.batched), "01_matmul_add: --fused runs addmm, which takes 2-D inputs; drop --batched");
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const int64_t n = f.size;
  const std::string variant = fmt::format("{}_{}_{}_{}{}{}", n, f.dtype, f.temperature(), f.fused ? "fused" : "eager",
                                          f.batched ? "_batched" : "", f.matrix_bias() ? "_matrix" : "");
  fmt::print("== Tutorial 01: add(matmul(x, w), b)  size {}  {}  {}  {}\n\n", n, f.dtype, device.str(),
             f.artifact_name(variant));
  print_expectations(f, device);

  ts::manual_seed(0);
  const ts::Dims shape = f.batched ? ts::Dims{kBatch, n, n} : ts::Dims{n, n};
  const ts::Tensor x = ts::randn(shape, {dtype, device});
  const ts::Tensor w = ts::randn(shape, {dtype, device});
  const ts::Tensor b = f.matrix_bias() ? ts::randn({n, n}, {dtype, device}) : ts::randn({n}, {dtype, device});
  const auto fn = [&] {
    prof::RecordFunction scope("matmul_add");
    return f.fused ? ts::addmm(b, x, w) : ts::add(ts::matmul(x, w), b);
  };
  for (int i = 0; i < f.warmup; ++i) fn();

  ts::Tensor y;
  const tutorial::ProfiledRun profiled =
      tutorial::profile_steps([&] { y = fn(); }, f, device, variant);
  tutorial::print_step_widths(profiled.recording);
  const int expected = f.fused ? 1 : 2;  // the GEMM (+ the add kernel when not fused)
  const tutorial::KernelCount count =
      tutorial::check_kernel_count(profiled.recording, expected, f.active, "step", device.is_cuda());
  fmt::print("{}\n", count.report);
  if (f.unprofiled > 0) time_unprofiled(f, device, profiled, [&] { y = fn(); });

  const double error = worst_error(x, w, b, y, n, f.batched ? kBatch : 1);
  const double tolerance = dtype == ts::DType::bf16 ? 1e-2 : dtype == ts::DType::f16 ? 2e-3 : 1e-4;
  const bool ok = error <= tolerance;
  fmt::print("check against a float64 reference: {} (worst error {:.2e} of the terms' magnitude, tolerance {:.0e})\n",
             ok ? "OK" : "FAILED", error, tolerance);
  return ok && count.passed() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tutorial::run_guarded([&] {
    Flags f;
    CLI::App app{"Tutorial 01: profile add(matmul(x, w), b): the table and the trace"};
    app.add_option("--size", f.size, "N: x and w are [N, N] (default 64; the series uses 64 and 4096)")
        ->check(tutorial::in_range(1, kMaxSize));
    app.add_flag("--batched", f.batched, "3-D inputs [4, N, N]: matmul dispatches to bmm");
    app.add_flag("--fused", f.fused, "one addmm(b, x, w) instead of matmul + add");
    app.add_option("--bias", f.bias, "the shape of b: [N], a bias row as Linear's (the default), or [N, N], the series' case")
        ->check(tutorial::one_of({"row", "matrix"}));
    app.add_option("--unprofiled", f.unprofiled, "after the profile, time N steps with the profiler off (default 0)")
        ->check(tutorial::in_range(0, tutorial::kMaxSteps));
    tutorial::add_common_flags(app, f, "traces/01_matmul_add");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
