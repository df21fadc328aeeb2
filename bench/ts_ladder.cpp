// bench/ts_ladder.cpp: every op's kernel ladder, each rung checked against the
// reference, then timed, then placed against the machine's roofline.
//
//   ts_ladder --list                          every op and its rungs: the whole syllabus
//   ts_ladder --op mm                         mm's ladder on the default device (cuda when a GPU is usable)
//   ts_ladder --op mm --shape 8192,8192,8192 --dtype bf16 --runs 20 --json mm.jsonl
//   ts_ladder --all --device cpu              every op that has a ladder problem
//   ts_ladder --help                          the options, and each op's --shape
//
// Every argument (--op, --shape's count and values, --device, --dtype, --runs, --warmup, the
// variant names in TS_VARIANT, --json's file) is checked before anything is measured: a wrong
// one stops the run with one line naming the option, what was given and what it takes (exit 2).
//
// For one op at one size, dtype and device:
//   1. The problem: the op's inputs (random values from a printed seed; --seed
//      repeats them) and its attributes, from the op's entry in kProblems below.
//   2. The reference: rung 0 runs on the CPU when it can (the inputs are copied
//      there), else on the device. When the op's cost at the timed size exceeds
//      kReferenceFlops (a 4096^3 GEMM on the CPU's triple loop takes minutes),
//      every rung is checked at the entry's small odd size instead, and the
//      table says so. Validation is never skipped.
//   3. Validation: each rung that runs on the device (device "any" rungs too:
//      views, composites) and whose supports() accepts the call runs once with
//      its outputs filled with NaN first, so that an element it never writes
//      fails; its output is compared element by element with the reference's
//      (bench/ladder_compare.h). A rung that refuses is listed with its reason;
//      one that disagrees prints FAIL, no speed, and the exit status becomes 1.
//   4. Timing: each rung that passed, called directly through Variant::run (no
//      dispatch, no profiler scope: only the kernel). CUDA: device time from
//      events around one call, after a 256 MiB memset that empties the L2
//      (bench/bench_timing.h, shared with ts_bench); CPU: a steady clock. The
//      median of --runs calls after --warmup, and the 10th..90th percentiles.
//   5. Roofline: the op's cost() gives the FLOPs and bytes it must do. The two
//      ceilings are measured at the start of the run, each the fastest of a few
//      calls: the copy bandwidth (1 GiB device to device through copy_'s memcpy
//      rung; a 256 MiB memcpy on the CPU) and the GEMM rate (mm's top rung,
//      8192^3 in the ladder's dtype on CUDA, 1024^3 f32 on the CPU). A rung's
//      % roof is the time the ceilings allow, max(FLOPs / GEMM rate, bytes /
//      copy bandwidth), over its median time.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench/bench_timing.h"
#include "bench/ladder_compare.h"
#include "ops/attention/attention.h"
#include "ops/copy/copy.h"
#include "ops/dispatch.h"
#include "ops/elementwise/elementwise.h"
#include "ops/factories/factories.h"
#include "ops/geglu/geglu.h"
#include "ops/masking/masking.h"
#include "ops/matmul/matmul.h"
#include "ops/ops.h"
#include "ops/reduce/reduce.h"
#include "ops/registry.h"
#include "ops/softmax/softmax.h"
#include "tensor/cuda_device.h"
#include "tensor/file_output.h"

namespace ts::ladder {

namespace {

using Size = std::vector<int64_t>;

// Above this many FLOPs at the timed size, a reference that runs on the CPU
// checks the rungs at the problem's small odd size (the triple-loop GEMM runs
// about 1 GFLOP/s: 2e10 FLOPs is 20 s).
constexpr double kReferenceFlops = 2e10;
// A rung whose first call takes longer than this is timed fewer times: enough
// calls to fill kRungSeconds, at least kMinRuns (and at most --runs).
constexpr double kSlowCallSeconds = 0.25;
constexpr double kRungSeconds = 5;
constexpr int kMinRuns = 5;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- one call of an op, owning what its OpCall points to ------------------------------------

class Call {
 public:
  template <typename Attrs>
  Call(const OpDef& op, const Attrs& attrs, std::vector<Tensor> inputs)
      : attrs_(std::make_shared<const Attrs>(attrs)),
        inputs_(std::move(inputs)),
        call_(op, *static_cast<const Attrs*>(attrs_.get()), Where::current()) {
    TS_CHECK(inputs_.size() <= call_.in.size(), "{}: too many inputs", op.name);
    for (const Tensor& x : inputs_) call_.in[call_.num_in++] = x.defined() ? &x : nullptr;
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  OpCall& get() { return call_; }
  Tensor& input(int i) { return inputs_[static_cast<size_t>(i)]; }

 private:
  std::shared_ptr<const void> attrs_;  // what call_ points to: declared first, destroyed last
  std::vector<Tensor> inputs_;
  OpCall call_;
};

// ---- the ladder problems: one entry per op ----------------------------------------------------

// An op's inputs at one size, and how to call the op on them (or on copies of
// them on another device: factories and to() put the device in their attributes).
struct Problem {
  std::vector<Tensor> inputs;  // on the ladder's device, in the op's order; undefined: an absent optional input
  std::function<std::unique_ptr<Call>(std::vector<Tensor> inputs, Device device)> call;
  int written = -1;            // the input the op writes in place (fill_, copy_'s dst, masked_fill_), or -1
  bool reads_written = false;  // it reads that input first (masked_fill_): restored before each check, not poisoned
};

template <typename Attrs>
Problem with(const OpDef& op, const Attrs& attrs, std::vector<Tensor> inputs) {
  return {std::move(inputs), [&op, attrs](std::vector<Tensor> in, Device) {
            return std::make_unique<Call>(op, attrs, std::move(in));
          }};
}

// The same, with attributes made for the device the call runs on.
template <typename MakeAttrs>
Problem with_device(const OpDef& op, MakeAttrs make_attrs, std::vector<Tensor> inputs = {}) {
  return {std::move(inputs), [&op, make_attrs](std::vector<Tensor> in, Device device) {
            return std::make_unique<Call>(op, make_attrs(device), std::move(in));
          }};
}

// What a problem builder gets: the op, the size (--shape, or the entry's default), dtype and device, the seed.
struct Request {
  const OpDef& op;
  Size s;
  Options o;
  uint64_t seed;
};

struct Spec {
  const char* op;         // the op's short name
  std::vector<int> ranks;  // how many numbers --shape takes
  const char* shape;      // the letters of --shape: "M,N,K"
  const char* what;       // what they make: "a [M, K] @ b [K, N]"
  Size cuda, cpu;         // default sizes on each device
  Size check;             // the small odd size the rungs are checked at when the reference is too slow at the timed one
  Numerics numerics;
  Problem (*build)(const Request& r);
};

using enum Numerics;

Problem binary(const Request& r) {
  const Size& s = r.s;
  const Tensor a = s.size() == 1 ? randn({s[0]}, r.o) : randn({s[0], s[1]}, r.o);
  Tensor b = s.size() == 1 ? randn({s[0]}, r.o) : randn({s[1]}, r.o);
  if (&r.op == &ops::div) b = add(rand(b.shape(), r.o), 0.5);  // divisors in [0.5, 1.5)
  return with(r.op, BinaryAttrs{}, {a, b});
}

Problem unary(const Request& r) { return with(r.op, NoAttrs{}, {randn({r.s[0]}, r.o)}); }

Problem masked(const Request& r) {  // x [B, S, L], the causal mask [S, L] broadcast over B, -inf
  const Tensor x = randn({r.s[0], r.s[1], r.s[2]}, r.o);
  const Tensor mask = triu(ones({r.s[1], r.s[2]}, {DType::b8, r.o.device}), 1);
  Problem p = with(r.op, MaskedFillAttrs{-std::numeric_limits<double>::infinity()}, {x, mask});
  if (&r.op == &ops::masked_fill_) {
    p.written = 0;
    p.reads_written = true;
  }
  return p;
}

Problem reduce_last(const Request& r) { return with(r.op, ReduceAttrs{.dim = 1}, {randn({r.s[0], r.s[1]}, r.o)}); }
Problem softmax_last(const Request& r) { return with(r.op, SoftmaxAttrs{.dim = 1}, {randn({r.s[0], r.s[1]}, r.o)}); }
Problem triangle(const Request& r) { return with(r.op, TriangleAttrs{}, {randn({r.s[0], r.s[1]}, r.o)}); }
Problem random_values(const Request& r) {
  return with_device(r.op, [n = r.s[0], dtype = r.o.dtype, seed = r.seed](Device device) {
    return RandomAttrs{.shape = {n}, .options = {dtype, device}, .seed = seed, .offset = 0};
  });
}

// clang-format off
const Spec kProblems[] = {
  // factories and copies
  {"fill_", {1}, "N", "fill_(x [N], 1.5)", {1 << 26}, {1 << 20}, {}, exact,
   [](const Request& r) { Problem p = with(r.op, FillAttrs{1.5}, {empty({r.s[0]}, r.o)}); p.written = 0; return p; }},
  {"copy_", {1, 2}, "N | M,N", "N: dst [N] <- src [N], dense (memcpy runs); M,N: dst [M, N] <- a transposed [N, M]",
   {1 << 26}, {1 << 20}, {}, exact,
   [](const Request& r) {
     const Size& s = r.s;
     const Tensor dst = s.size() == 1 ? empty({s[0]}, r.o) : empty({s[0], s[1]}, r.o);
     const Tensor src = s.size() == 1 ? randn({s[0]}, r.o) : t(randn({s[1], s[0]}, r.o));
     Problem p = with(r.op, NoAttrs{}, {dst, src});
     p.written = 0;
     return p;
   }},
  {"clone", {1}, "N", "clone(x [N])", {1 << 26}, {1 << 20}, {}, exact,
   [](const Request& r) { return with(r.op, NoAttrs{}, {randn({r.s[0]}, r.o)}); }},
  {"contiguous", {2}, "M,N", "contiguous(x), x a transposed [N, M]: a copy that transposes", {8192, 8192}, {1024, 1024}, {},
   exact, [](const Request& r) { return with(r.op, NoAttrs{}, {t(randn({r.s[1], r.s[0]}, r.o))}); }},
  {"to", {1}, "N", "x [N] to f32 on its device (to bf16 when the ladder's dtype is f32)", {1 << 26}, {1 << 20}, {}, exact,
   [](const Request& r) {
     const DType target = r.o.dtype == DType::f32 ? DType::bf16 : DType::f32;
     return with_device(r.op, [target](Device device) { return ToAttrs{target, device}; }, {randn({r.s[0]}, r.o)});
   }},
  {"arange", {1}, "N", "N values 0.25 + 0.5 i", {1 << 26}, {1 << 20}, {}, exact,
   [](const Request& r) {
     return with_device(r.op, [n = r.s[0], dtype = r.o.dtype](Device device) {
       return ArangeAttrs{.start = 0.25, .step = 0.5, .length = n, .options = {dtype, device}};
     });
   }},
  {"rand", {1}, "N", "N uniform values of the counter-based generator (the seed is the op's)", {1 << 26}, {1 << 20}, {},
   exact, random_values},
  {"randn", {1}, "N", "N normal values of the counter-based generator", {1 << 26}, {1 << 20}, {}, exact, random_values},
  // elementwise
  {"add", {1, 2}, "N | M,N", "N: a [N] + b [N]; M,N: a [M, N] + b [N], a bias row", {1 << 26}, {1 << 20}, {}, exact, binary},
  {"sub", {1, 2}, "N | M,N", "as add", {1 << 26}, {1 << 20}, {}, exact, binary},
  {"mul", {1, 2}, "N | M,N", "as add", {1 << 26}, {1 << 20}, {}, exact, binary},
  {"div", {1, 2}, "N | M,N", "as add, the divisors in [0.5, 1.5)", {1 << 26}, {1 << 20}, {}, exact, binary},
  {"neg", {1}, "N", "x [N]", {1 << 26}, {1 << 20}, {}, exact, unary},
  {"exp", {1}, "N", "x [N]", {1 << 26}, {1 << 20}, {}, exact, unary},
  {"tanh", {1}, "N", "x [N]", {1 << 26}, {1 << 20}, {}, exact, unary},
  {"gelu", {1}, "N", "x [N], the tanh approximation", {1 << 26}, {1 << 20}, {}, exact,
   [](const Request& r) { return with(r.op, GeluAttrs{GeluApprox::tanh}, {randn({r.s[0]}, r.o)}); }},
  {"relu", {1}, "N", "x [N]", {1 << 26}, {1 << 20}, {}, exact, unary},
  // softmax, masking, selection
  {"softmax", {2}, "R,C", "x [R, C] over the last dim (the warp rung takes C <= 1024)", {8192, 4096}, {1024, 1024}, {},
   accumulates, softmax_last},
  {"_safe_softmax", {2}, "R,C", "as softmax", {8192, 4096}, {1024, 1024}, {}, accumulates, softmax_last},
  {"masked_fill", {3}, "B,S,L", "x [B, S, L] <- -inf where triu(ones(S, L), 1), the causal mask", {16, 2048, 2048},
   {4, 256, 256}, {}, exact, masked},
  {"masked_fill_", {3}, "B,S,L", "as masked_fill, in place", {16, 2048, 2048}, {4, 256, 256}, {}, exact, masked},
  {"where", {2}, "M,N", "where(triu(ones(M, N)), a [M, N], b [M, N])", {8192, 8192}, {1024, 1024}, {}, exact,
   [](const Request& r) {
     const Tensor cond = triu(ones({r.s[0], r.s[1]}, {DType::b8, r.o.device}));
     return with(r.op, NoAttrs{}, {cond, randn({r.s[0], r.s[1]}, r.o), randn({r.s[0], r.s[1]}, r.o)});
   }},
  {"triu", {2}, "M,N", "x [M, N], diagonal 0", {8192, 8192}, {1024, 1024}, {}, exact, triangle},
  {"tril", {2}, "M,N", "x [M, N], diagonal 0", {8192, 8192}, {1024, 1024}, {}, exact, triangle},
  // reductions
  {"sum", {2}, "M,N", "x [M, N] summed over the last dim", {16384, 4096}, {1024, 1024}, {}, accumulates, reduce_last},
  {"max", {2}, "M,N", "x [M, N]: max and its index over the last dim", {16384, 4096}, {1024, 1024}, {}, exact,
   reduce_last},
  // matrix products
  // The check sizes of the GEMMs sit one off every tile (M odd, N and K not multiples of 64 or 128)
  // with rows 16-byte aligned, so that the tensor-core rungs (which move 16-byte chunks) take them.
  {"mm", {3}, "M,N,K", "a [M, K] @ b [K, N]", {4096, 4096, 4096}, {256, 256, 256}, {257, 136, 200}, accumulates,
   [](const Request& r) {
     const Size& s = r.s;
     return with(r.op, NoAttrs{}, {randn({s[0], s[2]}, r.o), randn({s[2], s[1]}, r.o)});
   }},
  {"bmm", {4}, "B,M,N,K", "a [B, M, K] @ b [B, K, N]", {8, 2048, 2048, 2048}, {4, 128, 128, 128}, {3, 65, 40, 72},
   accumulates,
   [](const Request& r) {
     const Size& s = r.s;
     return with(r.op, NoAttrs{}, {randn({s[0], s[1], s[3]}, r.o), randn({s[0], s[3], s[2]}, r.o)});
   }},
  {"addmm", {3}, "M,N,K", "c [N] (a bias row) + a [M, K] @ b [K, N]", {4096, 4096, 4096}, {256, 256, 256},
   {257, 136, 200}, accumulates,
   [](const Request& r) {
     const Size& s = r.s;
     return with(r.op, AddmmAttrs{}, {randn({s[1]}, r.o), randn({s[0], s[2]}, r.o), randn({s[2], s[1]}, r.o)});
   }},
  {"matmul", {4}, "B,M,N,K", "a [B, M, K] @ b [K, N]: folded into one mm of [B*M, K] @ [K, N]", {4, 1024, 4096, 4096},
   {2, 128, 256, 256}, {2, 129, 65, 97}, accumulates,
   [](const Request& r) {
     const Size& s = r.s;
     return with(r.op, NoAttrs{}, {randn({s[0], s[1], s[3]}, r.o), randn({s[3], s[2]}, r.o)});
   }},
  {"linear", {3}, "M,N,K", "x [M, K], weight [N, K], bias [N]: t + addmm", {8192, 3072, 768}, {256, 256, 256},
   {257, 129, 191}, accumulates,
   [](const Request& r) {
     const Size& s = r.s;
     return with(r.op, NoAttrs{}, {randn({s[0], s[2]}, r.o), randn({s[1], s[2]}, r.o), randn({s[1]}, r.o)});
   }},
  {"linear_geglu", {3}, "M,H,K", "x [M, K], weight [2H, K]: gelu_tanh(x W[:H]^T) * (x W[H:]^T)", {8192, 3072, 768},
   {256, 256, 256}, {257, 136, 200}, accumulates,
   [](const Request& r) {
     const Size& s = r.s;
     return with(r.op, NoAttrs{}, {randn({s[0], s[2]}, r.o), mul(randn({2 * s[1], s[2]}, r.o), 0.05)});
   }},
  // fused elementwise
  {"geglu", {2}, "M,N", "gelu_tanh(gate [M, N]) * up [M, N]", {8192, 3072}, {1024, 1024}, {}, exact,
   [](const Request& r) { return with(r.op, NoAttrs{}, {randn({r.s[0], r.s[1]}, r.o), randn({r.s[0], r.s[1]}, r.o)}); }},
  // attention
  {"scaled_dot_product_attention", {4}, "B,H,S,D", "q, k, v [B, H, S, D], is_causal", {4, 16, 4096, 64},
   {1, 4, 256, 64}, {1, 3, 257, 64}, accumulates,
   [](const Request& r) {
     const Dims shape{r.s[0], r.s[1], r.s[2], r.s[3]};
     return with(r.op, SdpaAttrs{.is_causal = true}, {randn(shape, r.o), randn(shape, r.o), randn(shape, r.o), Tensor()});
   }},
};
// clang-format on

// What --list says of an op with neither a problem nor a reason of its own; a test fails on it.
constexpr const char* kNoEntry = "no entry in ts_ladder's problem table (bench/ts_ladder.cpp, kProblems)";

const Spec* find_spec(const OpDef& op) {
  for (const Spec& spec : kProblems)
    if (op.short_name() == std::string_view(spec.op)) return &spec;
  return nullptr;
}

// Why an op has no entry in kProblems: its own word (OpDef::no_ladder_problem), or the gap.
std::string no_problem_reason(const OpDef& op) {
  if (op.no_ladder_problem != nullptr) return op.no_ladder_problem;
  return kNoEntry;
}

// ---- running a rung -------------------------------------------------------------------------

// What ts::dispatch does around a variant, without the profiler scope and the selection.
void run_rung(const Variant& v, OpCall& call) {
  if (v.device != VariantDevice::cuda) {
    v.run(call);
    return;
  }
  cuda::set_device(call.device.index);
  try {
    v.run(call);
  } catch (...) {
    cuda::clear_launch_error();
    throw;
  }
  cuda::check_launch(v.name);
}

// Fills a tensor a rung must write with values no rung computes: NaN, or -1 for indices.
void poison(Tensor& x) {
  if (!x.defined() || x.numel() == 0) return;
  if (is_floating(x.dtype())) {
    fill_(x, kNaN);
  } else if (x.dtype() == DType::i64) {
    fill_(x, -1);
  }
}

bool aliases_an_input(const OpCall& call, const Tensor& x) {
  for (const Tensor* in : call.tensor_args())
    if (in != nullptr && x.defined() && in->storage() == x.storage()) return true;
  return false;
}

// Runs rung v once on a prepared call, to check what it writes: the outputs
// poisoned first, an input written in place restored from `pristine` (when the
// op reads it) or poisoned (when it only writes it).
void run_for_check(const Variant& v, Call& c, const Problem& p, const Tensor& pristine) {
  OpCall& call = c.get();
  if (p.written >= 0) {
    Tensor& x = c.input(p.written);
    if (p.reads_written) {
      copy_(x, pristine);
    } else {
      poison(x);
    }
  }
  if (!aliases_an_input(call, call.out)) poison(call.out);
  poison(call.out2);
  run_rung(v, call);
  if (call.device.is_cuda()) cuda::synchronize();
}

// An output read back to the host.
struct Output {
  bool defined = false;
  std::vector<double> values;
  Dims shape;
  DType dtype = DType::f32;
};

// Every element as a double, in row-major order. A contiguous tensor's bytes are
// copied with one cudaMemcpy (no op of the runtime under test) and widened in one
// typed loop; anything else element by element through Tensor::to_vector.
std::vector<double> host_values(const Tensor& x) {
  if (!x.is_contiguous()) return x.to_vector<double>();
  const size_t n = static_cast<size_t>(x.numel()), bytes = n * x.element_size();
  std::vector<double> values(n);
  if (n == 0) return values;
  std::vector<char> staging;
  const void* data = x.data_ptr();
  if (x.device().is_cuda()) {
    staging.resize(bytes);
    cuda::copy_to_host(staging.data(), data, bytes, x.device().index);
    data = staging.data();
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(data);
    for (size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
        values[i] = static_cast<float>(p[i]);
      } else {
        values[i] = static_cast<double>(p[i]);
      }
    }
  });
  return values;
}

Output read_back(const Tensor& x) {
  if (!x.defined()) return {};
  return {true, host_values(x), x.shape(), x.dtype()};
}

// "" when `got` matches the reference output `want`, else what differs.
std::string mismatch(const Tensor& got, const Output& want, Numerics numerics, double& rel_err, const char* what) {
  if (!got.defined()) return fmt::format("{}: no output", what);
  if (got.shape() != want.shape)
    return fmt::format("{}: shape {}, the reference's is {}", what, got.shape(), want.shape);
  if (got.dtype() != want.dtype)
    return fmt::format("{}: dtype {}, the reference's is {}", what, dtype_short_name(got.dtype()),
                       dtype_short_name(want.dtype));
  const double tol = tolerance(want.dtype, numerics);
  const Comparison c = compare(host_values(got), want.values, tol);
  rel_err = std::max(rel_err, c.rel_err);
  return c.ok ? std::string() : fmt::format("{}: {}", what, describe_failure(c, tol, want.shape));
}

// ---- timing ---------------------------------------------------------------------------------

struct Settings {
  Device device = kCPU;
  DType dtype = DType::f32;
  std::string shape;  // --shape as given; empty: each op's default
  Size size;          // --shape read and checked against the one --op (parse_shape); empty: each op's default
  int runs = 20, warmup = 3;
  uint64_t seed = 0;
  FileOutput* json = nullptr;  // --json's file (tensor/file_output.h); null without --json
};

// Samples (microseconds, sorted) of one rung on a prepared call.
std::vector<double> time_rung(const Variant& v, OpCall& call, const Settings& s) {
  const bool gpu = call.device.is_cuda();
  const auto fn = [&] { run_rung(v, call); };
  // One call first, waited for: a warm-up that also says how long a call takes.
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  if (gpu) cuda::synchronize();
  const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int runs = s.runs, warmup = std::max(s.warmup - 1, 0);
  if (first > kSlowCallSeconds) {
    runs = std::clamp(static_cast<int>(kRungSeconds / first), std::min(kMinRuns, s.runs), s.runs);
    warmup = 0;
  }
  std::vector<double> us;
  if (gpu) {
    for (double ms : bench::device_times_ms(fn, warmup, runs)) us.push_back(ms * 1e3);
  } else {
    us = bench::host_times_us(fn, warmup, runs);
  }
  std::sort(us.begin(), us.end());
  return us;
}

// The p-th fraction of sorted samples (nearest rank).
double percentile(const std::vector<double>& sorted, double p) {
  return sorted[static_cast<size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)))];
}

// ---- the roofline's two ceilings ------------------------------------------------------------

struct Ceilings {
  double copy_bytes_per_s = 0;  // bytes read + written per second
  double gemm_flops_per_s = 0;
  std::string copy_how, gemm_how;
};

const Variant& top_rung(const OpDef& op, OpCall& call) {
  for (auto v = op.rungs.rbegin(); v != op.rungs.rend(); ++v)
    if (v->device != VariantDevice::any && v->runs_on(call.device.type) && v->accepts(call, nullptr)) return *v;
  fail("{}: no rung runs on {}", op.name, call.device.str());
}

// The seconds of the fastest of a few calls of a variant: a ceiling is the best the machine does.
double best_seconds_per_call(const Variant& v, OpCall& call, int warmup, int runs) {
  const auto fn = [&] { run_rung(v, call); };
  if (call.device.is_cuda()) {
    const std::vector<double> ms = bench::device_times_ms(fn, warmup, runs);
    return *std::min_element(ms.begin(), ms.end()) * 1e-3;
  }
  const std::vector<double> us = bench::host_times_us(fn, warmup, runs);
  return *std::min_element(us.begin(), us.end()) * 1e-6;
}

Ceilings measure_ceilings(Device device, DType dtype) {
  Ceilings c;
  if (device.is_cuda()) {
    const int64_t bytes = int64_t{1} << 30;
    const Options o{dtype, device};
    const int64_t n = bytes / static_cast<int64_t>(element_size(dtype));
    Call copy(ops::copy_, NoAttrs{}, {empty({n}, o), empty({n}, o)});
    ops::copy_.prepare(copy.get());
    const Variant& memcpy_rung = top_rung(ops::copy_, copy.get());
    c.copy_bytes_per_s = ops::copy_.cost(copy.get()).bytes / best_seconds_per_call(memcpy_rung, copy.get(), 3, 10);
    c.copy_how = fmt::format("{}, 1 GiB read + 1 GiB written, fastest of 10", memcpy_rung.name);
    const int64_t g = 8192;
    Call gemm(ops::mm, NoAttrs{}, {randn({g, g}, o), randn({g, g}, o)});
    ops::mm.prepare(gemm.get());
    const Variant& gemm_rung = top_rung(ops::mm, gemm.get());
    c.gemm_flops_per_s = ops::mm.cost(gemm.get()).flops / best_seconds_per_call(gemm_rung, gemm.get(), 3, 10);
    c.gemm_how = fmt::format("{}, {}^3 {}, fastest of 10", gemm_rung.name, g, dtype_short_name(dtype));
  } else {
    const size_t bytes = size_t{256} << 20;
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    const std::vector<double> times = bench::host_times_us([&] { std::memcpy(dst.data(), src.data(), bytes); }, 1, 5);
    const double us = *std::min_element(times.begin(), times.end());
    c.copy_bytes_per_s = 2.0 * static_cast<double>(bytes) / (us * 1e-6);
    c.copy_how = "memcpy, 256 MiB read + 256 MiB written, fastest of 5";
    const int64_t g = 1024;
    Call gemm(ops::mm, NoAttrs{}, {randn({g, g}), randn({g, g})});
    ops::mm.prepare(gemm.get());
    const Variant& gemm_rung = top_rung(ops::mm, gemm.get());
    c.gemm_flops_per_s = ops::mm.cost(gemm.get()).flops / best_seconds_per_call(gemm_rung, gemm.get(), 1, 5);
    c.gemm_how = fmt::format("{}, {}^3 f32, fastest of 5", gemm_rung.name, g);
  }
  return c;
}

// ---- one op's ladder ------------------------------------------------------------------------

enum class State { reference, ok, fail, refused, unchecked, error };

const char* state_name(State s) {
  switch (s) {
    case State::reference: return "reference";
    case State::ok: return "ok";
    case State::fail: return "FAIL";
    case State::refused: return "refused";
    case State::unchecked: return "unchecked";
    case State::error: return "ERROR";
  }
  return "?";
}

struct Row {
  const Variant* v = nullptr;
  State state = State::ok;
  std::string note;        // the reason a rung refused, what failed
  double rel_err = kNaN;   // against the reference
  bool timed = false;
  std::vector<double> us;  // sorted samples
};

std::string size_label(const Size& s) {
  std::string text;
  for (size_t i = 0; i < s.size(); ++i) text += fmt::format("{}{}", i ? "x" : "", s[i]);
  return text;
}

// --shape for one op: as many numbers as the op takes, each a positive integer, separated by ',' or 'x'.
Size parse_shape(const Spec& spec, const std::string& text) {
  Size size;
  size_t start = 0;
  while (true) {
    const size_t end = text.find_first_of(",x", start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    errno = 0;
    char* rest = nullptr;
    const long long value = std::strtoll(part.c_str(), &rest, 10);
    TS_CHECK(!part.empty() && part.find_first_not_of("0123456789") == std::string::npos && *rest == '\0' &&
                 value > 0 && errno != ERANGE,
             "{}: --shape '{}': '{}' is not a positive integer (below 2^63); --shape takes {} ({}), e.g. {}", spec.op,
             text, part, spec.shape, spec.what, size_label(spec.cpu));
    size.push_back(value);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  const std::string arities = fmt::format("{}", fmt::join(spec.ranks, " or "));
  if (std::find(spec.ranks.begin(), spec.ranks.end(), static_cast<int>(size.size())) == spec.ranks.end())
    fail("{}: --shape takes {} ({}: {} number{}), got '{}' ({} number{})", spec.op, spec.shape, spec.what, arities,
         arities == "1" ? "" : "s", text, size.size(), size.size() == 1 ? "" : "s");
  return size;
}

// FNV-1a: each op's inputs come from the run's seed and the op's name, so that
// --op X --seed S repeats what --all --seed S gave X.
uint64_t op_seed(uint64_t seed, std::string_view op) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : op) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return seed ^ h;
}

// Fixed-width numbers: more decimals for small values.
std::string num(double x) {
  if (!std::isfinite(x)) return "-";
  if (x >= 1000) return fmt::format("{:.0f}", x);
  if (x >= 100) return fmt::format("{:.1f}", x);
  if (x >= 10) return fmt::format("{:.2f}", x);
  return fmt::format("{:.3f}", x);
}

// One line of --json's file.
void write_json_line(const Settings& s, const nlohmann::ordered_json& j) { s.json->write(j.dump() + "\n"); }

void write_json(const Settings& s, const Row& row, const std::string& label, double tflops, double gbps, double roof,
                double median_us, double p10, double p90) {
  if (s.json == nullptr) return;
  const auto number = [](double x) { return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr); };
  nlohmann::ordered_json j;
  j["name"] = fmt::format("ladder/{}/{}/{}", row.v->name, dtype_short_name(s.dtype), label);
  j["value"] = row.timed ? number(median_us) : nlohmann::ordered_json(nullptr);
  j["unit"] = "us";
  j["p10_us"] = row.timed ? number(p10) : nlohmann::ordered_json(nullptr);
  j["p90_us"] = row.timed ? number(p90) : nlohmann::ordered_json(nullptr);
  j["runs"] = row.us.size();
  j[s.device.is_cuda() ? "tflops" : "gflops"] = row.timed ? number(tflops) : nlohmann::ordered_json(nullptr);
  j["gbps"] = row.timed ? number(gbps) : nlohmann::ordered_json(nullptr);
  j["roofline_pct"] = row.timed ? number(roof) : nlohmann::ordered_json(nullptr);
  j["rel_err"] = number(row.rel_err);
  j["status"] = state_name(row.state);
  if (!row.note.empty()) j["note"] = row.note;
  write_json_line(s, j);
}

// Validates and times every rung of one op; prints its table. False when a rung failed or erred.
bool run_op(const Spec& spec, const Settings& s, const Ceilings& ceilings) {
  const OpDef& op = *find_op(spec.op);
  const Size size = s.size.empty() ? (s.device.is_cuda() ? spec.cuda : spec.cpu) : s.size;
  const std::string label = size_label(size);
  const uint64_t seed = op_seed(s.seed, spec.op);
  const Options options{s.dtype, s.device};
  const bool gpu = s.device.is_cuda();

  manual_seed(seed);
  Problem timed = spec.build({op, size, options, seed});
  const std::unique_ptr<Call> timed_call = timed.call(timed.inputs, s.device);
  op.prepare(timed_call->get());
  const bool has_cost = op.cost != nullptr;
  const Cost cost = has_cost ? op.cost(timed_call->get()) : Cost{};

  // Where the reference runs, and at which size the rungs are checked.
  const Variant& ref = op.rungs[0];
  const Device ref_device = ref.runs_on(DeviceType::cpu) ? kCPU : s.device;
  const bool small = ref_device.is_cpu() && cost.flops > kReferenceFlops && !spec.check.empty();
  Problem small_problem;
  if (small) {
    manual_seed(seed + 1);
    small_problem = spec.build({op, spec.check, options, seed});
  }
  Problem& checked = small ? small_problem : timed;
  const std::string checked_label = small ? size_label(spec.check) : label;

  fmt::print("\n{}  {} {}  {}", spec.op, s.device.str(), dtype_short_name(s.dtype), label);
  if (has_cost) {
    fmt::print("  FLOPs {:.3g}  bytes {:.3g}  ceilings: copy {} GB/s, gemm {} {}", cost.flops, cost.bytes,
               num(ceilings.copy_bytes_per_s / 1e9), num(ceilings.gemm_flops_per_s / (gpu ? 1e12 : 1e9)),
               gpu ? "TFLOP/s" : "GFLOP/s");
  } else {
    fmt::print("  (the op declares no cost(): no roofline)");
  }
  fmt::print("\n  {}: {}\n", spec.shape, spec.what);
  std::fflush(stdout);

  // The reference: rung 0 on copies of the inputs (the written one always copied: rungs must not see its result).
  Tensor pristine;
  if (checked.written >= 0 && checked.reads_written) pristine = clone(checked.inputs[static_cast<size_t>(checked.written)]);
  std::vector<Tensor> ref_inputs;
  for (size_t i = 0; i < checked.inputs.size(); ++i) {
    const Tensor& x = checked.inputs[i];
    if (!x.defined()) {
      ref_inputs.emplace_back();
    } else if (x.device() != ref_device) {
      ref_inputs.push_back(to(x, ref_device));
    } else {
      ref_inputs.push_back(static_cast<int>(i) == checked.written ? clone(x) : x);
    }
  }
  std::unique_ptr<Call> ref_call = checked.call(std::move(ref_inputs), ref_device);
  op.prepare(ref_call->get());
  run_for_check(ref, *ref_call, checked, pristine);
  const Output want = read_back(ref_call->get().out), want2 = read_back(ref_call->get().out2);
  ref_call.reset();
  if (small) {
    fmt::print("  validated at {} against {} on the {} (its {:.3g} FLOPs at {} exceed {:.0e}: too slow to check there)",
               checked_label, ref.name, ref_device.str(), cost.flops, label, kReferenceFlops);
  } else {
    fmt::print("  validated at {} against {} on the {}", checked_label, ref.name, ref_device.str());
  }
  if (want.defined)
    fmt::print("; tolerance {:.0e} relative L2 ({})", tolerance(want.dtype, spec.numerics),
               dtype_short_name(want.dtype));
  fmt::print("\n");

  // Validation: every rung on the device, once. Their calls stay alive until all are checked,
  // so that no rung's output buffer is handed, still holding right values, to the next rung.
  std::vector<Row> rows;
  std::vector<std::unique_ptr<Call>> checked_calls;
  for (const Variant& v : op.rungs) {
    if (!v.runs_on(s.device.type)) continue;
    Row row;
    row.v = &v;
    if (&v == &ref && ref_device == s.device) {
      row.state = State::reference;
      if (small) row.note = fmt::format("not timed at {}: {:.3g} FLOPs on the reference", label, cost.flops);
      rows.push_back(std::move(row));
      continue;
    }
    try {
      std::string why;
      if (!v.accepts(timed_call->get(), &why)) {
        row.state = State::refused;
        row.note = why;
      } else {
        std::unique_ptr<Call> c = checked.call(checked.inputs, s.device);
        op.prepare(c->get());
        if (!v.accepts(c->get(), &why)) {
          row.state = State::unchecked;
          row.note = fmt::format("refuses the check size {}, so not timed: {}", checked_label, why);
        } else {
          run_for_check(v, *c, checked, pristine);
          double rel = 0;
          std::string bad = want.defined ? mismatch(c->get().out, want, spec.numerics, rel, "out") : "";
          if (bad.empty() && want2.defined) bad = mismatch(c->get().out2, want2, spec.numerics, rel, "indices");
          row.rel_err = rel;
          row.state = bad.empty() ? State::ok : State::fail;
          row.note = bad;
          checked_calls.push_back(std::move(c));
        }
      }
    } catch (const std::exception& e) {
      if (gpu) cuda::clear_launch_error();
      row.state = State::error;
      row.note = e.what();
    }
    rows.push_back(std::move(row));
  }
  checked_calls.clear();

  // Timing, and the table.
  size_t width = 20;
  for (const Row& row : rows) width = std::max(width, std::strlen(row.v->name));
  const char* rate_unit = gpu ? "TFLOP/s" : "GFLOP/s";
  fmt::print("{:>4}  {:<{}}  {:<9} {:>3} {:>11} {:>21} {:>8} {:>8} {:>7} {:>8}\n", "rung", "variant", width, "status",
             "n", "median us", "p10..p90 us", rate_unit, "GB/s", "% roof", "rel err");
  bool all_ok = true;
  for (Row& row : rows) {
    const bool timeable = row.state == State::ok || (row.state == State::reference && !small);
    if (timeable) {
      try {
        const std::unique_ptr<Call> c = timed.call(timed.inputs, s.device);
        op.prepare(c->get());
        row.us = time_rung(*row.v, c->get(), s);
        row.timed = true;
      } catch (const std::exception& e) {
        if (gpu) cuda::clear_launch_error();
        row.state = State::error;
        row.note = e.what();
      }
    }
    all_ok &= row.state == State::ok || row.state == State::reference || row.state == State::refused ||
              row.state == State::unchecked;
    const std::string rel = std::isfinite(row.rel_err) ? fmt::format("{:.1e}", row.rel_err) : "-";
    double median_us = kNaN, p10 = kNaN, p90 = kNaN, rate = kNaN, gbps = kNaN, roof = kNaN;
    if (row.timed) {
      median_us = bench::median(row.us);
      p10 = percentile(row.us, 0.1);
      p90 = percentile(row.us, 0.9);
      const double seconds = median_us * 1e-6;
      if (has_cost) {
        if (cost.flops > 0) rate = cost.flops / seconds / (gpu ? 1e12 : 1e9);
        gbps = cost.bytes / seconds / 1e9;
        double bound = 0;
        if (ceilings.gemm_flops_per_s > 0) bound = std::max(bound, cost.flops / ceilings.gemm_flops_per_s);
        if (ceilings.copy_bytes_per_s > 0) bound = std::max(bound, cost.bytes / ceilings.copy_bytes_per_s);
        if (bound > 0) roof = 100 * bound / seconds;
      }
      fmt::print("{:>4}  {:<{}}  {:<9} {:>3} {:>11} {:>21} {:>8} {:>8} {:>7} {:>8}\n", row.v->rung, row.v->name, width,
                 state_name(row.state), row.us.size(), num(median_us), num(p10) + ".." + num(p90), num(rate),
                 num(gbps), num(roof), rel);
    } else {
      std::string note = row.note;
      std::replace(note.begin(), note.end(), '\n', ' ');
      fmt::print("{:>4}  {:<{}}  {:<9} {}{}\n", row.v->rung, row.v->name, width, state_name(row.state),
                 "    ", note);
    }
    std::fflush(stdout);
    write_json(s, row, label, rate, gbps, roof, median_us, p10, p90);
  }
  return all_ok;
}

// ---- --list and --help ----------------------------------------------------------------------

void print_list() {
  size_t with_problem = 0;
  for (const OpDef* op : all_ops()) with_problem += find_spec(*op) != nullptr;
  fmt::print("ts_ladder --list: {} ops, {} variants, {} ops with a ladder problem; rung 0 is each op's reference\n",
             all_ops().size(), all_variants().size(), with_problem);
  fmt::print("columns: rung, name, device, the compute capability a CUDA rung needs (9.0a: that GPU only), summary;\n"
             "under each rung, the file that holds its code\n");
  size_t width = 0;
  for (const Variant* v : all_variants()) width = std::max(width, std::strlen(v->name));
  for (const OpDef* op : all_ops()) {
    if (const Spec* spec = find_spec(*op)) {
      fmt::print("\n{}  --shape {}: {} (default cuda {}, cpu {})\n", op->short_name(), spec->shape, spec->what,
                 size_label(spec->cuda), size_label(spec->cpu));
    } else {
      fmt::print("\n{}  no ladder problem: {}\n", op->short_name(), no_problem_reason(*op));
    }
    for (const Variant& v : op->rungs)
      fmt::print("  {:>4}  {:<{}}  {:<4}  {:<4}  {}\n        {}\n", v.rung, v.name, width, variant_device_name(v.device),
                 gpu_needs_name(v.needs), v.summary, v.source);
  }
  if (!cuda::built_with_cuda()) fmt::print("\n(no CUDA rungs: {})\n", cuda::unavailable_reason());
}

std::string shapes_help() {
  std::string text = "Each op's --shape (numbers separated by ',' or 'x'), and its default size on cuda / on the cpu:\n";
  for (const Spec& spec : kProblems)
    text += fmt::format("  {:<14} {:<9} {} [{} / {}]\n", spec.op, spec.shape, spec.what, size_label(spec.cuda),
                        size_label(spec.cpu));
  text += "\nOutput: one table per op. status: ok (matched the reference, then timed), reference (rung 0 on this "
          "device),\nrefused (the GPU lacks what it needs, or its supports() says why),\nunchecked (it refuses the small size the rungs were checked at: "
          "not timed),\nFAIL (differs from the reference: no speed; exit status 1), ERROR (it threw: exit status 1).\n% roof = max(FLOPs / GEMM ceiling, bytes / copy ceiling) / median time: 100 is as fast as the "
          "ceilings allow.";
  return text;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

int main_impl(int argc, char** argv) {
  CLI::App app{"ts_ladder: every op's kernel ladder, each rung checked against the reference, timed, and placed on "
               "the roofline"};
  std::string op_name, device_text, dtype_text, json_path;
  Settings s;
  bool all = false, list = false;
  uint64_t seed = 0;
  app.add_option("--op", op_name, "the op whose ladder to run (mm, add, softmax, scaled_dot_product_attention, ...)");
  app.add_flag("--all", all, "every op that has a ladder problem");
  app.add_flag("--list", list, "every op and its rungs (rung, name, device, needs, summary; then its file)");
  app.add_option("--device", device_text, "cpu or cuda (default: cuda when a GPU is usable, else cpu)");
  app.add_option("--dtype", dtype_text,
                 "f32, bf16 or f16 (default: bf16 on cuda, f16 on a GPU older than compute capability 8.0, f32 on "
                 "the cpu)");
  app.add_option("--shape", s.shape, "the problem size, e.g. 8192,8192,8192 for mm (below: each op's letters)");
  app.add_option("--runs", s.runs, "timed calls per rung (the median is reported)")->default_val(20);
  app.add_option("--warmup", s.warmup, "untimed calls before them")->default_val(3);
  CLI::Option* seed_option = app.add_option("--seed", seed, "seed of the random inputs (default: a fresh one, printed)");
  app.add_option("--json", json_path, "also write one JSON object per rung to this file");
  app.footer(shapes_help());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    fmt::print(stderr, "ts_ladder: {} (--help lists every option and what it takes)\n", one_line(e.what()));
    return 2;
  }

  if (list) {
    print_list();
    return 0;
  }

  // Every argument is checked here, before anything is allocated, launched or measured: a
  // mistake costs no ceiling measurement, and the message names the option, what was given and
  // what it takes.
  const auto bad = [](const std::string& message) {
    fmt::print(stderr, "ts_ladder: {}\n", one_line(message));
    return 2;
  };
  if (all && !op_name.empty()) return bad(fmt::format("--op {} and --all both given: give one of them", op_name));
  if (!all && op_name.empty()) return bad("give --op NAME (one op), --all (every op) or --list; --help says more");
  if (s.runs < 1) return bad(fmt::format("--runs {}: expected at least 1 timed call per rung", s.runs));
  if (s.warmup < 0) return bad(fmt::format("--warmup {}: expected 0 or more untimed calls", s.warmup));
  if (all && !s.shape.empty())
    return bad(fmt::format("--shape {} with --all: --shape applies to one --op (each op reads it differently)",
                           s.shape));

  std::vector<const Spec*> specs;
  if (all) {
    for (const OpDef* op : all_ops())
      if (const Spec* spec = find_spec(*op)) specs.push_back(spec);
  } else {
    const OpDef* op = find_op(op_name);
    if (op == nullptr) {
      if (const Variant* v = find_variant(op_name))
        return bad(fmt::format("--op {}: that is a variant of {}, not an op; --op {} runs every rung of {}, this one "
                               "included",
                               op_name, v->op->short_name(), v->op->short_name(), v->op->short_name()));
      return bad(fmt::format("--op {}: unknown op '{}' (expected an op's name, such as mm, add or softmax; --list "
                             "prints them all)",
                             op_name, op_name));
    }
    const Spec* spec = find_spec(*op);
    if (spec == nullptr)
      return bad(fmt::format("--op {}: {} has no ladder problem: {}", op_name, op->short_name(), no_problem_reason(*op)));
    specs.push_back(spec);
    if (!s.shape.empty()) {
      try {
        s.size = parse_shape(*spec, s.shape);
      } catch (const Error& e) {
        return bad(e.what());
      }
    }
  }

  if (device_text.empty()) {
    s.device = cuda::is_available() ? kCUDA : kCPU;
  } else {
    try {
      s.device = Device::parse(device_text);
    } catch (const Error& e) {
      return bad(fmt::format("--device {}: {}", device_text, e.what()));
    }
  }
  if (s.device.is_cuda()) {
    if (!cuda::is_available())
      return bad(fmt::format("--device {}: no usable CUDA device: {}", device_text, cuda::unavailable_reason()));
    try {
      check_device_available(s.device, "ts_ladder");
    } catch (const Error& e) {
      return bad(fmt::format("--device {}: {}", device_text.empty() ? s.device.str() : device_text, e.what()));
    }
  }

  if (!dtype_text.empty()) {
    bool known = true;
    try {
      s.dtype = parse_dtype(dtype_text);
    } catch (const Error&) {
      known = false;
    }
    if (!known || !is_floating(s.dtype))
      return bad(fmt::format("--dtype {}: expected f32, bf16 or f16 (the ladder's inputs are floating point)",
                             dtype_text));
  } else if (s.device.is_cuda()) {
    // A GPU older than 8.0 (Turing) has tensor cores for f16 and none for bf16: its ladder in f16.
    const cuda::DeviceTarget& t = cuda::target(s.device.index);
    s.dtype = t.chosen_as < cuda::ComputeCapability{8, 0} ? DType::f16 : DType::bf16;
    if (s.dtype == DType::f16)
      fmt::print("dtype: f16, not bf16: {} ({}) is compute capability {}, with tensor cores for f16 and none for "
                 "bf16 (--dtype bf16 asks for it anyway)\n",
                 s.device.str(), t.name, cuda::to_string(t.chosen_as));
  } else {
    s.dtype = DType::f32;
  }

  // TS_VARIANT (variant names, for the ops that make and check the inputs): every name must exist.
  try {
    reload_variant_environment();
  } catch (const Error& e) {
    return bad(e.what());
  }

  s.seed = seed_option->count() > 0 ? seed : std::random_device{}();
  // --json: the lines go to a temporary file beside it, which becomes the file at the end; made
  // now, so that a path that cannot be written stops the run before anything is measured.
  std::optional<FileOutput> json_file;
  if (!json_path.empty()) {
    try {
      s.json = &json_file.emplace(json_path, "--json " + json_path);
    } catch (const Error& e) {
      return bad(e.what());
    }
  }

  if (s.device.is_cuda()) {
    cuda::set_device(s.device.index);
    const cuda::DeviceProperties p = cuda::device_properties(s.device.index);
    fmt::print("ts_ladder: {} ({}, {} SMs), dtype {}, seed {} (--seed {} repeats these inputs)\n", s.device.str(),
               p.name, p.multiprocessors, dtype_short_name(s.dtype), s.seed, s.seed);
    fmt::print("timing: CUDA events around one call after a 256 MiB memset (L2 flushed); median of {} after {} "
               "warm-up (fewer for calls over {} s)\n",
               s.runs, s.warmup, kSlowCallSeconds);
  } else {
    fmt::print("ts_ladder: cpu, dtype {}, seed {} (--seed {} repeats these inputs)\n", dtype_short_name(s.dtype),
               s.seed, s.seed);
    fmt::print("timing: steady clock around one call; median of {} after {} warm-up (fewer for calls over {} s)\n",
               s.runs, s.warmup, kSlowCallSeconds);
  }
  Ceilings ceilings;
  try {
    ceilings = measure_ceilings(s.device, s.dtype);
    const bool gpu = s.device.is_cuda();
    fmt::print("ceilings: copy {} GB/s ({}); gemm {} {} ({})\n", num(ceilings.copy_bytes_per_s / 1e9),
               ceilings.copy_how, num(ceilings.gemm_flops_per_s / (gpu ? 1e12 : 1e9)), gpu ? "TFLOP/s" : "GFLOP/s",
               ceilings.gemm_how);
    if (s.json != nullptr) {
      write_json_line(s, {{"name", fmt::format("ladder/ceiling/copy/{}", s.device.str())},
                          {"value", ceilings.copy_bytes_per_s / 1e9},
                          {"unit", "GB/s"}});
      write_json_line(s, {{"name", fmt::format("ladder/ceiling/gemm/{}/{}", s.device.str(),
                                               gpu ? dtype_short_name(s.dtype) : "f32")},
                          {"value", ceilings.gemm_flops_per_s / (gpu ? 1e12 : 1e9)},
                          {"unit", gpu ? "TFLOP/s" : "GFLOP/s"}});
    }
  } catch (const std::exception& e) {
    fmt::print("ceilings: not measured ({}): no % roof\n", one_line(e.what()));
  }
  fmt::print("% roof = max(FLOPs / gemm, bytes / copy) / median: 100 is as fast as the two ceilings allow\n");

  int failed = 0;
  for (const Spec* spec : specs) {
    bool ok = false;
    try {
      ok = run_op(*spec, s, ceilings);
    } catch (const std::exception& e) {
      if (s.device.is_cuda()) cuda::clear_launch_error();
      fmt::print("{}: ERROR {}\n", spec->op, one_line(e.what()));
    }
    failed += !ok;
  }
  if (all) {
    fmt::print("\nno ladder problem:");
    for (const OpDef* op : all_ops())
      if (find_spec(*op) == nullptr) fmt::print(" {}", op->short_name());
    fmt::print("\n");
  }
  fmt::print("\n{} of {} ops: every rung ok or refused{}\n", specs.size() - static_cast<size_t>(failed), specs.size(),
             failed ? fmt::format("; {} with a FAIL or ERROR", failed) : "");
  if (s.json != nullptr) {
    try {
      s.json->commit();
    } catch (const Error& e) {  // a byte of it lost (a full disk): the run's figures are not in the file
      fmt::print(stderr, "ts_ladder: {}\n", one_line(e.what()));
      return 1;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

}  // namespace ts::ladder

int main(int argc, char** argv) {
  try {
    return ts::ladder::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "ts_ladder: {}\n", e.what());
  } catch (...) {
    std::fflush(stdout);
    fmt::print(stderr, "ts_ladder: unknown exception\n");
  }
  return 2;
}
