// tutorials/04_attention.cpp: the series' part 3: causal attention, six paths to one function.
//
// softmax(q k^T / sqrt(D) + causal mask) v on q, k, v [B, H, S, D] = [4, 16, 1024, 64], bf16:
//   naive     matmul, mul(scale), masked_fill (out of place), softmax, matmul: 5 kernels and the
//             hidden copy, a Memcpy DtoD of the [B, H, S, S] scores made by masked_fill's clone.
//   inplace   masked_fill_ instead: 5 kernels, the copy gone.
//   math      ts::scaled_dot_product_attention's math rung (PyTorch's math backend): f32 upcasts,
//             the mask rebuilt on every call, a safe softmax: 12 kernels, f32 GEMMs.
//   flash_v1  the fused rungs: 1 kernel, the scores never in memory (flash_v2 on a GPU of compute
//   flash_v2  capability 8.0 or newer: mma.sync tensor cores; flash_v3 on 9.0 alone: Hopper's wgmma
//   flash_v3  and TMA).
// The naive paths' mask is built once, before profiling (nn::CausalSelfAttention's constructor).
// On a CPU the fused paths cannot run: the tutorial says why and runs the math path instead. On a
// GPU without a fused rung's instructions it says why and runs the best fused rung the GPU has.
//
// Writes traces/04_attention/<B>x<H>x<S>x<D>_<dtype>_<cold|warm>_<path>[_noncausal][_<tag>].{json,txt}.
//
// Run: ./build/dev/tutorials/04_attention [--path naive|inplace|math|flash_v1|flash_v2|flash_v3] [--batch 4]
//          [--heads 16] [--seq 1024] [--head-dim 64] [--causal|--no-causal] [--dtype bf16|f16|f32]
//          [--warmup 0] [--active 3] [--device cpu|cuda] [--out-dir DIR] [--tag NAME]
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tutorials/tutorial_support.h"

namespace {

namespace nn = ts::nn;
namespace prof = ts::profiler;

struct Flags : tutorial::CommonFlags {
  std::string path = "naive";
  int64_t batch = 4, heads = 16, seq = 1024, head_dim = 64;
  bool causal = true;
};

// 134.2 MB, 4.4 kB, 512 B.
std::string bytes_str(double bytes) {
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

// ---- what to expect ----------------------------------------------------------------------------

void print_expectations(nn::AttentionPath path, const Flags& f, ts::DType dtype, ts::Device device) {
  const bool causal = f.causal;
  const bool gpu = device.is_cuda();
  const char* memory = gpu ? "GPU memory" : "memory";  // where the scores live
  const int kernels = nn::expected_kernels(path, causal, dtype);
  const int copies = nn::expected_memcpys(path, causal, dtype);
  const double es = static_cast<double>(ts::element_size(dtype));
  const double score_elems = static_cast<double>(f.batch * f.heads) * static_cast<double>(f.seq * f.seq);
  const double qkv_bytes = static_cast<double>(f.batch * f.heads * f.seq * f.head_dim) * es;

  fmt::print("Guess first, then look:\n");
  if (!gpu)
    fmt::print("  - on the CPU each op below runs its CPU reference and has finished when it returns: the table\n"
               "    shows them as rows of CPU time. On a GPU the same ops would launch:\n");
  fmt::print("  - {} kernel{} per forward on a GPU{}:\n", kernels, kernels == 1 ? "" : "s",
             copies > 0 ? fmt::format(" and {} copy (a Memcpy row, not a kernel): {} GPU operations", copies,
                                      kernels + copies)
                        : "");
  for (const nn::ExpectedLaunch& e : nn::expected_launches(path, causal, dtype)) {
    const std::string count = e.memcpys > 0 ? fmt::format("{} copy", e.memcpys) : fmt::format("{} kernel{}", e.kernels,
                                                                                              e.kernels == 1 ? "" : "s");
    fmt::print("      {:<34} {:<10} {}\n", e.op, count, e.what);
  }
  if (!causal && !nn::is_fused(path))
    fmt::print("    --no-causal: no mask, so no mask kernels{}.\n",
               path == nn::AttentionPath::naive ? " and no masked_fill, hence no copy either" : "");

  const double one = score_elems * es;  // one [B, H, S, S] tensor in the input dtype
  switch (path) {
    case nn::AttentionPath::naive:
      if (causal)
        fmt::print("  - the copy: ts::masked_fill is out of place, so it runs ts::clone -> ts::copy_ on the\n"
                   "    scores first ({}, {} read and {} written),\n"
                   "    then ts::masked_fill_ on the copy.\n",
                   gpu ? "one cudaMemcpyAsync device to device" : "a copy in memory, the ts::copy_ row",
                   bytes_str(one), bytes_str(one));
      fmt::print("  - the [{}, {}, {}, {}] scores live in {}: {} each in {}. The forward writes\n"
                 "    {} of them (q@k^T, *scale,{} softmax) and reads them back between {}.\n",
                 f.batch, f.heads, f.seq, f.seq, memory, bytes_str(one), f.dtype, causal ? 4 : 3,
                 causal ? " the clone," : "", gpu ? "kernels" : "ops");
      break;
    case nn::AttentionPath::inplace:
      fmt::print("  - no copy: ts::masked_fill_ writes -inf into the scores where they are.\n");
      fmt::print("  - the [{}, {}, {}, {}] scores live in {}: {} each in {}; the forward writes\n"
                 "    3 of them (q@k^T, *scale, softmax), one fewer than the naive path.\n",
                 f.batch, f.heads, f.seq, f.seq, memory, bytes_str(one), f.dtype);
      break;
    case nn::AttentionPath::math: {
      const double f32 = score_elems * 4;
      if (dtype == ts::DType::f32)
        fmt::print("  - no copy: f32 inputs need no casts.\n");
      else
        fmt::print("  - no hidden copy, but 4 casts: ts::to (empty + copy_) turns q, k, v into f32 and the\n"
                   "    result back into {}, a copy_ {} each.\n",
                   f.dtype, gpu ? "kernel" : "row");
      fmt::print("  - the [{}, {}, {}, {}] scores live in {} in f32: {} each{}. The GEMMs run\n"
                 "    in f32{}.\n"
                 "    The mask is rebuilt on every call{}.\n",
                 f.batch, f.heads, f.seq, f.seq, memory, bytes_str(f32), dtype == ts::DType::f32 ? "" : " (twice the bytes of 16-bit)",
                 gpu ? ": with TF32 off their kernel names show no 16-bit or TF32 types" : ", on f32 copies of q, k and v",
                 causal ? fmt::format(" (ones, then triu: a [{}, {}] bool tensor of {})", f.seq, f.seq,
                                      bytes_str(static_cast<double>(f.seq * f.seq)))
                        : " (here none: --no-causal)");
      fmt::print("  - the most ops of the six paths: the most CPU time per forward.\n");
      break;
    }
    case nn::AttentionPath::flash_v1:
    case nn::AttentionPath::flash_v2:
    case nn::AttentionPath::flash_v3:
      fmt::print("  - no copy, and the [{}, {}, {}, {}] scores ({} in {}) never reach GPU memory: a block\n"
                 "    keeps one tile of them in registers and shared memory, with a running max and sum\n"
                 "    (online softmax). The kernel reads q, k, v and writes out: {} each.\n",
                 f.batch, f.heads, f.seq, f.seq, bytes_str(one), f.dtype, bytes_str(qkv_bytes));
      fmt::print("  - one op, one launch: the least CPU time per forward. Click the kernel in the trace for\n"
                 "    its footprint (registers per thread, shared memory, blocks and warps per SM).\n");
      break;
  }
  fmt::print("\n");
}

// ---- profiling ---------------------------------------------------------------------------------

using Profile = tutorial::ProfiledRun;

// GPU work per op over the active steps: kernels, copies and memsets, charged to the innermost op.
struct OpLaunches {
  int kernels = 0, memcpys = 0, memsets = 0;
  std::set<std::string> kernel_names;
};

std::map<std::string, OpLaunches> launches_by_op(const prof::Recording& r) {
  std::map<uint64_t, std::string> op_of_id;
  for (const prof::Event& e : r.events)
    if (e.kind == prof::EventKind::cpu_op) op_of_id[e.id] = std::string(e.name);
  std::map<std::string, OpLaunches> by_op;
  for (const prof::Event& e : r.events) {
    if (e.kind != prof::EventKind::kernel && e.kind != prof::EventKind::memcpy && e.kind != prof::EventKind::memset)
      continue;
    const auto it = op_of_id.find(e.id);
    OpLaunches& o = by_op[it != op_of_id.end() ? it->second : std::string("(no op)")];
    if (e.kind == prof::EventKind::kernel) {
      ++o.kernels;
      o.kernel_names.insert(std::string(e.name));
    } else if (e.kind == prof::EventKind::memcpy) {
      ++o.memcpys;
    } else {
      ++o.memsets;
    }
  }
  return by_op;
}

bool is_library_gemm(const std::string& op) { return op == "ts::bmm" || op == "ts::mm" || op == "ts::addmm"; }

// Compares what ran with expected_launches, op by op. A GEMM that launched more kernels than one
// (cuBLAS chose a split-K plan with a reduce kernel for this shape) is explained, not an error;
// any other difference is. Returns false on a real mismatch.
bool check_launches(nn::AttentionPath path, const Flags& f, ts::DType dtype, const Profile& p) {
  const int kernels = nn::expected_kernels(path, f.causal, dtype);
  const int copies = nn::expected_memcpys(path, f.causal, dtype);
  if (!p.device_ran) {
    fmt::print("kernels: none recorded (CPU run); on a GPU this path launches {} kernel{}{} per forward\n", kernels,
               kernels == 1 ? "" : "s", copies > 0 ? fmt::format(" and {} copy", copies) : "");
    return true;
  }
  const ts::profiler::DeviceActivityInfo& activity = p.recording.device_activity;
  if (activity.source != "cupti") {
    fmt::print("kernels: cannot be counted in this run: CUPTI did not record ({}): the profiler fell back to\n"
               "  timing each op with CUDA events, which sees ops, not kernels. (Another tool holding CUPTI,\n"
               "  such as ncu or cuda-gdb, does this.) On a GPU without such a tool this path launches {}\n"
               "  kernel{}{} per forward.\n",
               activity.error.empty() ? activity.source : activity.error, kernels, kernels == 1 ? "" : "s",
               copies > 0 ? fmt::format(" and {} copy", copies) : "");
    return true;
  }

  std::map<std::string, std::pair<int, int>> want;  // op -> (kernels, memcpys) per forward
  for (const nn::ExpectedLaunch& e : nn::expected_launches(path, f.causal, dtype)) {
    want[e.op].first += e.kernels;
    want[e.op].second += e.memcpys;
  }
  const std::map<std::string, OpLaunches> got = launches_by_op(p.recording);
  std::set<std::string> ops;
  for (const auto& [op, w] : want) ops.insert(op);
  for (const auto& [op, g] : got) ops.insert(op);

  int seen_kernels = 0, seen_copies = 0, seen_memsets = 0;
  bool ok = true;
  std::vector<std::string> explained, wrong;
  for (const std::string& op : ops) {
    const auto w = want.count(op) ? want.at(op) : std::pair<int, int>{0, 0};
    const OpLaunches g = got.count(op) ? got.at(op) : OpLaunches{};
    seen_kernels += g.kernels;
    seen_copies += g.memcpys;
    seen_memsets += g.memsets;
    const int want_k = w.first * f.active, want_c = w.second * f.active;
    if (g.kernels == want_k && g.memcpys == want_c) continue;
    const std::string line = fmt::format("{}: {} kernels and {} copies over {} steps, expected {} and {}", op,
                                         g.kernels, g.memcpys, f.active, want_k, want_c);
    if (is_library_gemm(op) && g.memcpys == want_c && g.kernels > want_k && want_k > 0) {
      std::string names;
      for (const std::string& n : g.kernel_names) names += "\n        " + n;
      explained.push_back(line + fmt::format(
                                     "\n      cuBLAS chose a plan of {:.3g} kernels per GEMM for this shape (a split-K "
                                     "GEMM and its reduce kernel): a library's choice, not an extra op. Kernels:{}",
                                     static_cast<double>(g.kernels) / (w.first * f.active), names));
    } else {
      wrong.push_back(line);
      ok = false;
    }
  }
  const double per = 1.0 / f.active;
  fmt::print("kernels: expected {} per forward{}, observed {} kernels{} over {} steps ({:.1f} per forward){}: {}\n",
             kernels, copies > 0 ? fmt::format(" and {} copy", copies) : "", seen_kernels,
             seen_copies > 0 || copies > 0 ? fmt::format(" and {} copies", seen_copies) : "", f.active,
             seen_kernels * per, seen_memsets > 0 ? fmt::format("; {} memsets (cuBLAS's, charged to the GEMM, not counted)", seen_memsets) : "",
             ok ? (explained.empty() ? "OK" : "OK (differences explained below)") : "MISMATCH");
  for (const std::string& e : explained) fmt::print("    explained: {}\n", e);
  for (const std::string& e : wrong) fmt::print("    MISMATCH: {}\n", e);
  return ok;
}

// The fused kernel's footprint, as its trace record shows it.
void print_footprints(const Profile& p) {
  std::set<std::string> seen;
  for (const prof::Event& e : p.recording.events) {
    if (e.kind != prof::EventKind::kernel || !seen.insert(std::string(e.name)).second) continue;
    if (e.name.find("flash") == std::string_view::npos) continue;
    const prof::KernelInfo& k = e.kernel_info;
    fmt::print("footprint of {} (its trace record):\n"
               "  grid [{}, {}, {}], block [{}, {}, {}], registers per thread {}, shared memory {} bytes,\n"
               "  blocks per SM {:.6f}, warps per SM {:.6f}, est. achieved occupancy {}%\n",
               e.name, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.registers_per_thread,
               k.shared_memory, k.blocks_per_sm, k.warps_per_sm, k.occupancy_percent);
  }
}

// Per forward: the host's time in attn_fwd and the GPU's time in the work it launched.
void print_per_forward(const Profile& p, const Flags& f) {
  const prof::KeyAverage* fwd = p.averages.find("attn_fwd", /*is_device=*/false);
  double device_ns = 0;
  for (const prof::Event& e : p.recording.events)
    if (e.kind == prof::EventKind::kernel || e.kind == prof::EventKind::memcpy || e.kind == prof::EventKind::memset)
      device_ns += static_cast<double>(e.duration_ns());
  if (fwd == nullptr) return;
  fmt::print("per forward: CPU {:.3f} us (attn_fwd, CPU time avg){}\n", fwd->cpu_time_us(),
             p.device_ran ? fmt::format(", GPU {:.3f} us (its kernels and copies, summed)", device_ns / 1e3 / f.active)
                          : std::string());
}

// ---- the float64 check --------------------------------------------------------------------------

// Relative L2 error of four output rows (first, last, two between, across batches and heads)
// against softmax(q k^T / sqrt(D) + mask) v computed in double from the same inputs.
double sampled_error(const ts::Tensor& q, const ts::Tensor& k, const ts::Tensor& v, const ts::Tensor& out,
                     bool causal) {
  const int64_t B = q.size(0), H = q.size(1), S = q.size(2), D = q.size(3), L = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  struct Row {
    int64_t b, h, i;
  };
  const Row rows[] = {{0, 0, 0}, {B - 1, H - 1, S - 1}, {B / 2, H / 2, S / 3}, {0, H - 1, 2 * S / 3}};
  double diff2 = 0, ref2 = 0;
  for (const Row& r : rows) {
    const std::vector<double> qi = q.select(0, r.b).select(0, r.h).select(0, r.i).to_vector<double>();
    const std::vector<double> kk = k.select(0, r.b).select(0, r.h).to_vector<double>();  // [L, D]
    const std::vector<double> vv = v.select(0, r.b).select(0, r.h).to_vector<double>();
    const std::vector<double> got = out.select(0, r.b).select(0, r.h).select(0, r.i).to_vector<double>();
    const int64_t visible = causal ? std::min(L, r.i + 1) : L;
    std::vector<double> s(static_cast<size_t>(visible));
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < visible; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += qi[static_cast<size_t>(d)] * kk[static_cast<size_t>(j * D + d)];
      s[static_cast<size_t>(j)] = dot * scale;
      m = std::max(m, s[static_cast<size_t>(j)]);
    }
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - m));
    for (int64_t d = 0; d < D; ++d) {
      double ref = 0;
      for (int64_t j = 0; j < visible; ++j) ref += s[static_cast<size_t>(j)] * vv[static_cast<size_t>(j * D + d)];
      ref /= sum;
      const double e = got[static_cast<size_t>(d)] - ref;
      diff2 += e * e;
      ref2 += ref * ref;
    }
  }
  return std::sqrt(diff2 / ref2);
}

// ---- the run --------------------------------------------------------------------------------------

int run(Flags f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "04_attention");
  tutorial::choose_dtype(f, device);  // bf16, or f16 on a GPU without bf16 tensor cores
  tutorial::prepare_out_dir(f.out_dir);
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  nn::AttentionPath path = nn::parse_attention_path(f.path);

  ts::manual_seed(0);
  const ts::Options opt{dtype, device};
  const ts::Tensor q = ts::randn({f.batch, f.heads, f.seq, f.head_dim}, opt);
  const ts::Tensor k = ts::randn({f.batch, f.heads, f.seq, f.head_dim}, opt);
  const ts::Tensor v = ts::randn({f.batch, f.heads, f.seq, f.head_dim}, opt);

  fmt::print("== Tutorial 04: attention, path {}  q, k, v [{}, {}, {}, {}]  {}  {}  {}\n\n", f.path, f.batch, f.heads,
             f.seq, f.head_dim, f.dtype, f.causal ? "causal" : "not causal", device.str());
  if (nn::is_fused(path)) {
    const std::string why = nn::attention_path_refusal(path, q, k, v, f.causal);
    std::string gpu_lacks;
    if (!why.empty() && device.is_cpu()) {
      fmt::print("The {} path cannot run on the CPU: its rung, {}, is a CUDA kernel\n"
                 "(the rung says: {}).\n"
                 "Running the CPU reference instead: --path math (the same function, op by op).\n\n",
                 f.path, nn::attention_variant_name(path), why);
      path = nn::AttentionPath::math;
      f.path = "math";
    } else if (!ts::gpu_meets_rung(nn::attention_variant_name(path), device, &gpu_lacks)) {
      // This GPU lacks the rung's instructions (flash_v2 needs 8.0, flash_v3 9.0 alone): the lesson
      // runs the best fused rung it has, and says so.
      const nn::AttentionPath asked = path;
      for (nn::AttentionPath lower : {nn::AttentionPath::flash_v2, nn::AttentionPath::flash_v1})
        if (lower < asked && ts::gpu_meets_rung(nn::attention_variant_name(lower), device, nullptr)) {
          path = lower;
          break;
        }
      fmt::print("The {} path cannot run on this GPU: its rung, {}, {}.\n"
                 "Running --path {} instead, the best fused rung this GPU runs.\n\n",
                 f.path, nn::attention_variant_name(asked), gpu_lacks, nn::attention_path_name(path));
      f.path = nn::attention_path_name(path);
    }
    // Any other refusal (a head dim or dtype the rung lacks) is the user's to fix: forward throws it.
  }
  print_expectations(path, f, dtype, device);

  const nn::CausalSelfAttention attn(path, f.seq, device, f.causal, "attn_fwd");
  ts::Tensor out;
  const auto forward = [&] { out = attn.forward(q, k, v); };
  for (int i = 0; i < f.warmup; ++i) forward();
  const std::string config = fmt::format("{}x{}x{}x{}_{}_{}_{}{}", f.batch, f.heads, f.seq, f.head_dim, f.dtype,
                                         f.temperature(), f.path, f.causal ? "" : "_noncausal");
  const Profile p = tutorial::profile_steps(forward, f, device, config, /*row_limit=*/25);

  const bool count_ok = check_launches(path, f, dtype, p);
  print_footprints(p);
  print_per_forward(p, f);
  const double error = sampled_error(q, k, v, out, f.causal);
  // bf16/f16: the inputs, the scores (naive paths) and the output each round to 8 or 11 bits.
  const double tolerance = dtype == ts::DType::f32 ? 1e-4 : 2e-2;
  fmt::print("check of 4 output rows against a float64 reference: {} (relative error {:.2e}, tolerance {:.0e})\n",
             error <= tolerance ? "OK" : "FAILED", error, tolerance);
  return count_ok && error <= tolerance ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tutorial::run_guarded([&] {
    Flags f;
    CLI::App app{"Tutorial 04: attention: naive, in-place, math, flash_v1, flash_v2, flash_v3"};
    app.add_option("--path", f.path,
                   "how attention is computed (default naive; flash_v2 needs compute capability 8.0+, flash_v3 9.0)")
        ->check(tutorial::one_of({"naive", "inplace", "math", "flash_v1", "flash_v2", "flash_v3"}));
    app.add_option("--batch", f.batch, "batch B (default 4)")->check(tutorial::in_range(1, 1 << 12));
    app.add_option("--heads", f.heads, "heads H (default 16)")->check(tutorial::in_range(1, 1 << 10));
    app.add_option("--seq", f.seq, "sequence length S (default 1024)")->check(tutorial::in_range(1, 1 << 16));
    app.add_option("--head-dim", f.head_dim, "head dim D (default 64)")->check(tutorial::in_range(1, 1 << 10));
    // Two flags, not CLI11's "--causal,!--no-causal", whose help reads "--causal,--no-causal{false}".
    CLI::Option* causal = app.add_flag("--causal", f.causal, "mask future keys (the default)");
    app.add_flag_callback("--no-causal", [&f] { f.causal = false; }, "attend to every key: no mask")->excludes(causal);
    tutorial::add_common_flags(app, f, "traces/04_attention");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
