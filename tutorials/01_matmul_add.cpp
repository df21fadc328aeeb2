// tutorials/01_matmul_add.cpp: the series' part 1: profile fn(x, w, b) = add(matmul(x, w), b).
//
// The two artifacts of a profile: the table (what took time) and the trace
// (when, and why). The profiler runs the schedule wait=1, warmup=1, active=N:
// steps 0 and 1 are not recorded, ProfilerStep#2.. are (--schedule-wait 0
// --schedule-warmup 0 records from the very first call). Each step is
//   ProfilerStep#N > matmul_add (a user annotation) > ts::matmul > ts::mm,
// then ts::add; with --batched the GEMM is ts::bmm, with --fused it is one
// ts::addmm whose epilogue adds the bias. At size 64 the host-side cost of
// dispatching dominates (overhead-bound); at 4096 the GEMM does (compute-bound).
// Without --warmup the first call pays the first-use costs; the series' schedule
// leaves that call unrecorded.
//
// Writes traces/01_matmul_add/<size>_<dtype>_<cold|warm>_<eager|fused>.{json,txt}
// (relative to the current directory); open the .json in ui.perfetto.dev.
//
// Run: ./build/dev/tutorials/01_matmul_add [--size 64] [--dtype bf16|f16|f32] [--warmup 0]
//          [--batched] [--fused] [--active 3] [--schedule-wait 1] [--schedule-warmup 1] [--device cpu|cuda]
#include <fmt/core.h>

#include <cmath>
#include <vector>

#include "ops/ops.h"
#include "profiler/profiler.h"
#include "tutorials/tutorial_support.h"

namespace {

namespace prof = ts::profiler;

constexpr int64_t kBatch = 4;  // --batched: x and w are [4, N, N]
constexpr int64_t kMaxSize = 16384;  // --size: a [16384, 16384] f32 matrix is 1 GiB, 8.8 TFLOP per GEMM

struct Flags : tutorial::CommonFlags {
  int64_t size = 64;
  bool batched = false;
  bool fused = false;
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
  if (f.fused) {
    fmt::print("  - each step: ProfilerStep#N > matmul_add > ts::addmm. One op: the bias add happens in the\n"
               "    GEMM's epilogue, so there is no ts::add row (and no copy of the bias first).\n");
  } else {
    fmt::print("  - each step: ProfilerStep#N > matmul_add > ts::matmul > {}, then ts::add. ts::matmul only\n"
               "    dispatches: its Self CPU is small, its CPU total holds {}.{}\n",
               gemm, gemm, f.batched ? " 3-D inputs take the bmm path." : "");
  }
  const std::string work = flop >= 1e9 ? fmt::format("{:.1f} GFLOP", flop / 1e9) : fmt::format("{:.2f} MFLOP", flop / 1e6);
  if (f.size <= 256) {
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
  fmt::print("  - {}: {}\n\n", f.temperature(),
             f.warmup > 0 ? "first-use costs were paid before profiling; the steps look alike."
             : first == 0 ? "nothing ran before: ProfilerStep#0 pays the first-use costs (library handles,\n"
                            "    workspaces, module loading) and is the widest step."
                          : fmt::format("no warm-up iterations, but the schedule's unrecorded step{} ({}) came first\n"
                                        "    and absorbed the first-use costs (--schedule-wait 0 --schedule-warmup 0 records them).",
                                        first == 1 ? "" : "s", first));
}

// Largest error of out against a float64 reference, relative to the size of the terms
// (sum of |x*w| + |b|) so that one bound fits every dtype and size. Checks every
// element of small results and 512 scattered ones of large results.
double worst_error(const ts::Tensor& x, const ts::Tensor& w, const ts::Tensor& b, const ts::Tensor& out, int64_t n,
                   int64_t batches) {
  const std::vector<float> xv = x.to_vector<float>(), wv = w.to_vector<float>(), bv = b.to_vector<float>();
  const std::vector<float> ov = out.to_vector<float>();
  const int64_t elements = batches * n * n;
  const int64_t checks = elements <= (1 << 18) ? elements : 512;
  double worst = 0;
  for (int64_t c = 0; c < checks; ++c) {
    const int64_t at = checks == elements ? c : (c * 2654435761LL) % elements;
    const int64_t batch = at / (n * n), i = (at / n) % n, j = at % n;
    double ref = bv[static_cast<size_t>(j)], scale = std::abs(ref);
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

int run(const Flags& f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "01_matmul_add");
  tutorial::prepare_out_dir(f.out_dir);
  TS_CHECK(!(f.fused && f.batched), "01_matmul_add: --fused runs addmm, which takes 2-D inputs; drop --batched");
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const int64_t n = f.size;
  const std::string variant = fmt::format("{}_{}_{}_{}{}", n, f.dtype, f.temperature(), f.fused ? "fused" : "eager",
                                          f.batched ? "_batched" : "");
  fmt::print("== Tutorial 01: add(matmul(x, w), b)  size {}  {}  {}  {}\n\n", n, f.dtype, device.str(),
             f.artifact_name(variant));
  print_expectations(f, device);

  ts::manual_seed(0);
  const ts::Dims shape = f.batched ? ts::Dims{kBatch, n, n} : ts::Dims{n, n};
  const ts::Tensor x = ts::randn(shape, {dtype, device});
  const ts::Tensor w = ts::randn(shape, {dtype, device});
  const ts::Tensor b = ts::randn({n}, {dtype, device});
  const auto fn = [&] {
    prof::RecordFunction scope("matmul_add");
    return f.fused ? ts::addmm(b, x, w) : ts::add(ts::matmul(x, w), b);
  };
  for (int i = 0; i < f.warmup; ++i) fn();

  ts::Tensor y;
  const tutorial::ProfiledRun profiled =
      tutorial::profile_steps([&] { y = fn(); }, f, device, variant);
  if (profiled.device_ran) {
    const int expected = f.fused ? 1 : 2;  // the GEMM (+ the add kernel when not fused)
    fmt::print("kernels: expected {} per step, observed {} over {} steps\n", expected, profiled.kernels, f.active);
  }

  const double error = worst_error(x, w, b, y, n, f.batched ? kBatch : 1);
  const double tolerance = dtype == ts::DType::bf16 ? 1e-2 : dtype == ts::DType::f16 ? 2e-3 : 1e-4;
  const bool ok = error <= tolerance;
  fmt::print("check against a float64 reference: {} (worst error {:.2e} of the terms' magnitude, tolerance {:.0e})\n",
             ok ? "OK" : "FAILED", error, tolerance);
  return ok ? 0 : 1;
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
    tutorial::add_common_flags(app, f, "traces/01_matmul_add");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
