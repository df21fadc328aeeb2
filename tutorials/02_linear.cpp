// tutorials/02_linear.cpp: the series' part 2 opening: what nn.Linear runs.
//
// y = x W^T + b. ts::linear dispatches ts::t (a view: shape and strides swap,
// nothing moves, zero device time) and ts::addmm: ONE GEMM, whose epilogue
// adds the bias, so there is no separate add kernel. The GEMM reads W^T in
// place: the transposed layout is chosen in the library call, not copied.
// A single Linear has nothing left to fuse: --fused passes the weight
// pre-transposed, so ts::t disappears from the CPU lane while the GPU runs
// the very same kernel.
//
// The run ends by counting the kernels: one per forward, or the library's own plan
// explained (cuBLASLt may pick a split-K algorithm, two kernels, for some shapes).
//
// Writes traces/02_linear/<tokens>x<in>x<out>_<dtype>_<cold|warm>_<eager|fused>[_<tag>].{json,txt}.
//
// Run: ./build/dev/tutorials/02_linear [--tokens 1024] [--in 32] [--out 64] [--dtype bf16|f16|f32]
//          [--warmup 0] [--active 3] [--fused] [--device cpu|cuda] [--out-dir DIR] [--tag NAME]
#include <fmt/core.h>

#include <cmath>

#include "nn/linear.h"
#include "ops/ops.h"
#include "tutorials/tutorial_support.h"

namespace {

struct Flags : tutorial::CommonFlags {
  int64_t tokens = 1024, in = 32, out = 64;
  bool fused = false;
};

// ||y - ref|| / ||ref|| with ref = x W^T + b in double.
double relative_error(const ts::Tensor& x, const ts::Tensor& w, const ts::Tensor& b, const ts::Tensor& y) {
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
  const std::vector<double> yv = y.to_vector<double>();
  const int64_t T = x.size(0), K = x.size(1), N = w.size(0);
  double diff2 = 0, ref2 = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double ref = bv[static_cast<size_t>(n)];
      for (int64_t k = 0; k < K; ++k) ref += xv[static_cast<size_t>(t * K + k)] * wv[static_cast<size_t>(n * K + k)];
      const double d = yv[static_cast<size_t>(t * N + n)] - ref;
      diff2 += d * d;
      ref2 += ref * ref;
    }
  return std::sqrt(diff2 / ref2);
}

int run(Flags f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "02_linear");
  tutorial::choose_dtype(f, device);  // bf16, or f16 on a GPU without bf16 tensor cores
  tutorial::prepare_out_dir(f.out_dir);
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const std::string config = fmt::format("{}x{}x{}_{}_{}_{}", f.tokens, f.in, f.out, f.dtype,
                                         f.temperature(), f.fused ? "fused" : "eager");
  fmt::print("== Tutorial 02: Linear({}, {}, bias) on x [{}, {}]  {}  {}\n\n", f.in, f.out, f.tokens, f.in, f.dtype,
             device.str());
  fmt::print("Guess first, then look:\n");
  const double mflop = 2.0 * f.tokens * f.in * f.out / 1e6;
  if (device.is_cuda()) {
    if (f.fused) {
      fmt::print("  - each step: linear_fwd > ts::addmm, nothing else: W^T was made once, before profiling,\n"
                 "    as a view. The GPU lane shows the same single GEMM kernel as the eager run.\n");
    } else {
      fmt::print("  - each step: linear_fwd > ts::linear > ts::t (a view: CPU time only, 0 CUDA time) and\n"
                 "    ts::addmm (one GEMM). No ts::add: the bias rides in the GEMM's epilogue.\n");
    }
    fmt::print("  - 1 kernel per forward on a GPU. The GEMM is {:.1f} MFLOP: overhead-bound, CPU time >> GPU time.\n\n",
               mflop);
  } else {
    if (f.fused) {
      fmt::print("  - each step: linear_fwd > ts::addmm, nothing else: W^T was made once, before profiling,\n"
                 "    as a view. ts::addmm runs the same GEMM as in the eager run; only ts::t's row is gone.\n");
    } else {
      fmt::print("  - each step: linear_fwd > ts::linear > ts::t (a view: nothing below it, only bookkeeping)\n"
                 "    and ts::addmm (one GEMM). No ts::add: ts::addmm adds the bias in the same call.\n");
    }
    fmt::print("  - on the CPU the GEMM ({:.1f} MFLOP) runs inside ts::addmm: its Self CPU is nearly all of the\n"
               "    step. On a GPU the same forward is 1 kernel, and launching it costs more than running it.\n\n",
               mflop);
  }

  ts::manual_seed(0);
  const ts::nn::Linear linear(f.in, f.out, /*bias=*/true, {dtype, device}, "linear_fwd");
  const ts::Tensor x = ts::randn({f.tokens, f.in}, {dtype, device});
  const ts::Tensor weight_t = linear.weight().t();  // --fused: the view made once, outside the profile
  ts::Tensor y;
  const auto forward = [&] {
    if (f.fused) {
      ts::profiler::RecordFunction scope(linear.name());
      y = ts::addmm(linear.bias(), x, weight_t);
    } else {
      y = linear.forward(x);
    }
  };
  for (int i = 0; i < f.warmup; ++i) forward();
  const tutorial::ProfiledRun run = tutorial::profile_steps(forward, f, device, config);

  tutorial::print_step_widths(run.recording);
  const tutorial::KernelCount count =
      tutorial::check_kernel_count(run.recording, /*per_step=*/1, f.active, "forward", device.is_cuda());
  fmt::print("{}\n", count.report);
  const bool ok = count.passed();
  const double error = relative_error(x, linear.weight(), linear.bias(), y);
  const double tolerance = dtype == ts::DType::f32 ? 1e-5 : 1e-2;
  fmt::print("check against a float64 reference: {} (relative error {:.2e}, tolerance {:.0e})\n",
             error <= tolerance ? "OK" : "FAILED", error, tolerance);
  return ok && error <= tolerance ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tutorial::run_guarded([&] {
    Flags f;
    CLI::App app{"Tutorial 02: what nn.Linear runs: t (a view) and one addmm"};
    app.add_option("--tokens", f.tokens, "rows of x (default 1024)")->check(tutorial::in_range(1, 1 << 24));
    app.add_option("--in", f.in, "in_features (default 32)")->check(tutorial::in_range(1, 1 << 16));
    app.add_option("--out", f.out, "out_features (default 64)")->check(tutorial::in_range(1, 1 << 16));
    app.add_flag("--fused", f.fused, "pass the weight pre-transposed: ts::t leaves the CPU lane");
    tutorial::add_common_flags(app, f, "traces/02_linear");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
