// tutorials/03_mlp.cpp: the series' part 2: the GeGLU MLP, eager, fused, merged, and in a GEMM's epilogue.
//
// down(gelu_tanh(gate(x)) * up(x)) on x [batch, seq, dim] = [64, 128, 768],
// hidden 3072, bf16 (the article's sizes). Three paths to the same function:
//   eager   5 kernels per forward: 3 GEMMs, gelu, mul. The [8192, 3072]
//           gelu output is written to memory by one kernel and read back by the next.
//   fused   4 kernels: gelu and mul in one pass (ts::geglu): two tensors of
//           [8192, 3072] bf16 less traffic (96 MB per forward).
//   merged  3 kernels: gate and up as one GEMM on the concatenated weight,
//           then the fused kernel reads both halves of its output in place.
//   epilogue 2 kernels (on Hopper): one GEMM computes gate and up for each output
//           tile and writes only gelu(gate) * up; the [8192, 6144] product of the
//           merged path never reaches memory. Then the down GEMM.
// The views (t, view, narrow) show in the table with zero CUDA time.
//
// Writes traces/03_mlp/<batch>x<seq>x<dim>x<hidden>_<dtype>_<cold|warm>_<path>[_<tag>].{json,txt}.
//
// Run: ./build/dev/tutorials/03_mlp [--path eager|fused|merged|epilogue] [--batch 64] [--seq 128]
//          [--dim 768] [--hidden 3072] [--dtype bf16|f16|f32] [--warmup 0] [--active 3] [--device cpu|cuda]
//          [--out-dir DIR] [--tag NAME]
#include <fmt/core.h>

#include <string>

#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "profiler/key_averages.h"
#include "tutorials/mlp_reference.h"
#include "tutorials/tutorial_support.h"

namespace {

struct Flags : tutorial::CommonFlags {
  std::string path = "eager";
  int64_t batch = 64, seq = 128, dim = 768, hidden = 3072;
};

int run(Flags f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "03_mlp");
  tutorial::choose_dtype(f, device);  // bf16, or f16 on a GPU without bf16 tensor cores
  tutorial::prepare_out_dir(f.out_dir);
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const ts::nn::MlpPath path = ts::nn::parse_mlp_path(f.path);
  // The epilogue path's one GEMM is Hopper's (sm_90a); elsewhere linear_geglu runs its composite.
  std::string no_one_gemm;
  const bool one_gemm = !device.is_cuda() || ts::nn::GeGLUMLP::one_gemm_epilogue(device, &no_one_gemm);
  const int expected = ts::nn::GeGLUMLP::kernels_per_forward(path, one_gemm);
  const int64_t tokens = f.batch * f.seq;
  const std::string config = fmt::format("{}x{}x{}x{}_{}_{}_{}", f.batch, f.seq, f.dim, f.hidden, f.dtype,
                                         f.temperature(), f.path);
  fmt::print("== Tutorial 03: GeGLU MLP, path {}  x [{}, {}, {}], hidden {}  {}  {}\n\n", f.path, f.batch, f.seq,
             f.dim, f.hidden, f.dtype, device.str());
  // In the table's units (PyTorch's: 1 MB = 2^20 bytes), so the guess reads like the memory columns.
  const int64_t inter_bytes = tokens * f.hidden * static_cast<int64_t>(ts::element_size(dtype));
  const std::string inter = ts::profiler::format_memory(inter_bytes);
  const std::string inter_twice = ts::profiler::format_memory(2 * inter_bytes);
  fmt::print("Guess first, then look:\n");
  if (!device.is_cuda())
    fmt::print("  - on the CPU each op has finished when it returns: the table shows the ops a GPU run shows,\n"
               "    as rows of CPU time, where a GPU would launch a kernel for each.\n");
  const char* kernel = device.is_cuda() ? "kernel" : "op";  // what one step of the path is, on this device
  fmt::print("  - {} kernels per forward on a GPU{}: ", expected,
             path == ts::nn::MlpPath::epilogue && !device.is_cuda() ? " of compute capability 9.0" : "");
  switch (path) {
    case ts::nn::MlpPath::eager:
      fmt::print("3 GEMMs (no biases: ts::linear -> ts::matmul -> ts::mm),\n"
                 "    a gelu {} and a mul {}. Each [{}, {}] intermediate is {}: gelu writes one,\n"
                 "    mul reads it back with up's output and writes another.\n",
                 kernel, kernel, tokens, f.hidden, inter);
      break;
    case ts::nn::MlpPath::fused:
      fmt::print("3 GEMMs and one ts::geglu {}: gelu(g) * u in one pass.\n"
                 "    It saves writing and re-reading the gelu output: {} of traffic per forward.\n",
                 kernel, inter_twice);
      break;
    case ts::nn::MlpPath::merged:
      fmt::print("one GEMM for gate and up together ([{}, {}] output), the fused {} on\n"
                 "    its two halves (views, read in place), and the down GEMM.\n",
                 tokens, 2 * f.hidden, kernel);
      break;
    case ts::nn::MlpPath::epilogue:
      if (!device.is_cuda()) {
        fmt::print("one GEMM kernel (ts::linear_geglu)\n"
                   "    computes gate and up for each output tile and writes only gelu(gate) * up ([{}, {}]),\n"
                   "    then the down GEMM.\n"
                   "  - on the CPU (as on other GPUs, in 3 kernels) ts::linear_geglu runs its composite rung,\n"
                   "    linear_geglu/any/composite: ts::linear on the whole [{}, {}] weight (one [{}, {}]\n"
                   "    product), then ts::geglu on its two halves, then the down GEMM: the merged path's ops,\n"
                   "    under ts::linear_geglu.\n",
                   tokens, f.hidden, 2 * f.hidden, f.dim, tokens, 2 * f.hidden);
        break;
      }
      if (!one_gemm) {
        fmt::print("ts::linear_geglu's composite rung on this GPU: its one-GEMM rung\n"
                   "    {}.\n"
                   "    So: the merged path's GEMM of gate and up, the fused kernel on its halves, and the down GEMM.\n",
                   no_one_gemm);
        break;
      }
      fmt::print("one GEMM kernel (ts::linear_geglu) that computes gate and up for each\n"
                 "    output tile in registers and writes only gelu(gate) * up ([{}, {}]), then the down GEMM.\n"
                 "    The merged path's [{}, {}] product ({} written, then read) never reaches memory.\n",
                 tokens, f.hidden, tokens, 2 * f.hidden, inter_twice);
      break;
  }
  if (device.is_cuda())
    fmt::print("  - views (ts::t, ts::view, ts::narrow) show in the table with CPU time only, 0 CUDA time.\n"
               "  - the GEMMs dominate CUDA time: {:.3g} GFLOP each for gate, up and down.\n\n",
               2.0 * static_cast<double>(tokens * f.dim * f.hidden) / 1e9);
  else
    fmt::print("  - views (ts::t, ts::view, ts::narrow) show in the table with nothing below them: only\n"
               "    bookkeeping, no copy.\n"
               "  - the GEMMs dominate CPU time: {:.3g} GFLOP each for gate, up and down.\n\n",
               2.0 * static_cast<double>(tokens * f.dim * f.hidden) / 1e9);

  ts::manual_seed(0);
  const ts::nn::GeGLUMLP mlp(f.dim, f.hidden, path, {dtype, device}, "mlp_fwd");
  const ts::Tensor x = ts::randn({f.batch, f.seq, f.dim}, {dtype, device});
  ts::Tensor y;
  const auto forward = [&] { y = mlp.forward(x); };
  for (int i = 0; i < f.warmup; ++i) forward();
  const tutorial::ProfiledRun run = tutorial::profile_steps(forward, f, device, config);

  // Strict on our kernels; a cuBLASLt plan of more kernels for this shape is explained, not an error;
  // not checked (exit 0, said) when another tool holds CUPTI.
  tutorial::print_step_widths(run.recording);
  const tutorial::KernelCount count =
      tutorial::check_kernel_count(run.recording, expected, f.active, "forward", device.is_cuda());
  fmt::print("{}\n", count.report);
  const bool ok = count.passed();
  const double error = tutorial::mlp_sampled_error(mlp, x, y, 4);  // the first, the last and two rows between
  // Three GEMMs and the elementwise middle each round to the dtype once.
  const double tolerance = dtype == ts::DType::f32 ? 1e-4 : 2e-2;
  fmt::print("check of 4 output rows against a float64 reference: {} (relative error {:.2e}, tolerance {:.0e})\n",
             error <= tolerance ? "OK" : "FAILED", error, tolerance);
  return ok && error <= tolerance ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tutorial::run_guarded([&] {
    Flags f;
    CLI::App app{"Tutorial 03: the GeGLU MLP, eager, fused, merged and in a GEMM's epilogue"};
    app.add_option("--path", f.path, "how the MLP is computed (default eager)")
        ->check(tutorial::one_of({"eager", "fused", "merged", "epilogue"}));
    app.add_option("--batch", f.batch, "batch (default 64)")->check(tutorial::in_range(1, 1 << 12));
    app.add_option("--seq", f.seq, "sequence length (default 128)")->check(tutorial::in_range(1, 1 << 16));
    app.add_option("--dim", f.dim, "model dim (default 768)")->check(tutorial::in_range(1, 1 << 16));
    app.add_option("--hidden", f.hidden, "hidden dim (default 3072)")->check(tutorial::in_range(1, 1 << 18));
    tutorial::add_common_flags(app, f, "traces/03_mlp");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
