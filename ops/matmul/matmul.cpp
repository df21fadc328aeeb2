// ops/matmul/matmul.cpp: front end of mm, bmm, addmm, and the composites matmul and linear.
//
// Letters: out is M x N, the reduction runs over K, B counts batches.
//   mm:     a [M, K] @ b [K, N] -> [M, N]
//   bmm:    a [B, M, K] @ b [B, K, N] -> [B, M, N]
//   addmm:  beta * c + alpha * (a @ b); c is [N] (a bias row) or broadcastable to [M, N]
//   matmul: torch.matmul's rules (below); linear: x W^T + bias.
#include "ops/matmul/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ts {

namespace {

void check_gemm_operands(const OpCall& call, const Tensor& a, const Tensor& b) {
  check_same_dtype(call, a, b);
  check_floating(call, a, "mat1");
}

void prepare_mm(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  TS_CHECK(a.dim() == 2, "mm: mat1 must be a matrix, got a {}-D tensor of shape {}", a.dim(), a.shape());
  TS_CHECK(b.dim() == 2, "mm: mat2 must be a matrix, got a {}-D tensor of shape {}", b.dim(), b.shape());
  TS_CHECK(a.shape()[1] == b.shape()[0], "mm: mat1 and mat2 shapes cannot be multiplied ({} and {})",
           shape_x(a.shape()), shape_x(b.shape()));
  check_gemm_operands(call, a, b);
  call.out = make_contiguous_tensor({a.shape()[0], b.shape()[1]}, {a.dtype(), call.device}, call.op.name);
}

void prepare_bmm(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  TS_CHECK(a.dim() == 3, "bmm: batch1 must be a 3D tensor, got shape {}", a.shape());
  TS_CHECK(b.dim() == 3, "bmm: batch2 must be a 3D tensor, got shape {}", b.shape());
  TS_CHECK(a.shape()[0] == b.shape()[0],
           "bmm: batch1 and batch2 must have the same number of batches, got {} and {} (batch1 {}, batch2 {})",
           a.shape()[0], b.shape()[0], a.shape(), b.shape());
  TS_CHECK(a.shape()[2] == b.shape()[1],
           "bmm: expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}] "
           "(batch1 {}, batch2 {})",
           a.shape()[0], a.shape()[2], b.shape()[0], b.shape()[1], a.shape(), b.shape());
  check_gemm_operands(call, a, b);
  call.out = make_contiguous_tensor({a.shape()[0], a.shape()[1], b.shape()[2]}, {a.dtype(), call.device},
                                    call.op.name);
}

void prepare_addmm(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& c = call.input(0);
  const Tensor& a = call.input(1);
  const Tensor& b = call.input(2);
  TS_CHECK(a.dim() == 2 && b.dim() == 2, "addmm: mat1 and mat2 must be matrices, got shapes {} and {}", a.shape(),
           b.shape());
  TS_CHECK(a.shape()[1] == b.shape()[0], "addmm: mat1 and mat2 shapes cannot be multiplied ({} and {})",
           shape_x(a.shape()), shape_x(b.shape()));
  check_gemm_operands(call, a, b);
  check_same_dtype(call, c, a);
  const Dims out_shape{a.shape()[0], b.shape()[1]};
  TS_CHECK(c.dim() <= 2 && broadcast_shapes(call, c.shape(), out_shape) == out_shape,
           "addmm: the input of shape {} cannot be broadcast to the product's shape {}", c.shape(), out_shape);
  call.out = make_contiguous_tensor(out_shape, {a.dtype(), call.device}, call.op.name);
}

void prepare_matmul(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  TS_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both arguments need at least 1 dimension, got shapes {} and {}",
           a.shape(), b.shape());
  const int64_t ka = a.shape()[a.dim() - 1];
  const int64_t kb = b.dim() == 1 ? b.shape()[0] : b.shape()[b.dim() - 2];
  TS_CHECK(ka == kb, "matmul: shapes {} and {} cannot be multiplied ({} vs {} in the contracted dim)", a.shape(),
           b.shape(), ka, kb);
  check_gemm_operands(call, a, b);
}

void prepare_linear(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  TS_CHECK(w.dim() == 2, "linear: weight must be [out_features, in_features], got shape {}", w.shape());
  TS_CHECK(x.dim() >= 1 && x.shape()[x.dim() - 1] == w.shape()[1],
           "linear: x has {} features but weight expects {} (x: {}, weight: {})", x.dim() ? x.shape()[x.dim() - 1] : 0,
           w.shape()[1], x.shape(), w.shape());
  check_gemm_operands(call, x, w);
  if (call.in[2] != nullptr) {
    const Tensor& bias = call.input(2);
    TS_CHECK(bias.dim() == 1 && bias.shape()[0] == w.shape()[0],
             "linear: bias must be [out_features] = [{}], got shape {}", w.shape()[0], bias.shape());
    check_same_dtype(call, x, bias);
  }
}

void prepare_linear_geglu(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  TS_CHECK(w.dim() == 2 && w.shape()[0] % 2 == 0,
           "linear_geglu: weight must be [2 * hidden, in_features] (gate rows, then up rows), got shape {}", w.shape());
  TS_CHECK(x.dim() >= 1 && x.shape()[x.dim() - 1] == w.shape()[1],
           "linear_geglu: x has {} features but weight expects {} (x: {}, weight: {})",
           x.dim() ? x.shape()[x.dim() - 1] : 0, w.shape()[1], x.shape(), w.shape());
  check_gemm_operands(call, x, w);
}

}  // namespace

// The TF32 switch (ops.h), kept here so that every build has it; the cuBLASLt rung reads it.
namespace {
std::atomic<int> tf32_allowed{-1};  // -1: not decided yet; read TS_ALLOW_TF32 at first use
}

void cuda::set_allow_tf32(bool allow) { tf32_allowed.store(allow ? 1 : 0); }

bool cuda::allow_tf32() {
  int v = tf32_allowed.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* env = std::getenv("TS_ALLOW_TF32");
    v = env != nullptr && std::strcmp(env, "1") == 0 ? 1 : 0;
    tf32_allowed.store(v);
  }
  return v == 1;
}

Tensor mm(const Tensor& a, const Tensor& b, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::mm, attrs, loc, {&a, &b});
  return dispatch(call);
}

Tensor bmm(const Tensor& a, const Tensor& b, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::bmm, attrs, loc, {&a, &b});
  return dispatch(call);
}

Tensor addmm(const Tensor& c, const Tensor& a, const Tensor& b, double beta, double alpha, Where loc) {
  const AddmmAttrs attrs{beta, alpha};
  OpCall call(ops::addmm, attrs, loc, {&c, &a, &b});
  return dispatch(call);
}

Tensor matmul(const Tensor& a, const Tensor& b, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::matmul, attrs, loc, {&a, &b});
  return dispatch(call);
}

// torch.matmul, case by case (as in ATen's matmul):
//   1-D operands become [1, K] / [K, 1] matrices and the added dim is dropped after;
//   2-D @ 2-D is mm;
//   N-D @ 1-D or 2-D folds a's batch dims into M: one mm on a [B*M, K] view;
//   otherwise batch dims broadcast, fold into one, and bmm runs.
void matmul_composite(const Tensor& a, const Tensor& b, Tensor& out) {
  const int da = a.dim(), db = b.dim();

  if (da <= 2 && db <= 2) {
    const Tensor a2 = da == 1 ? unsqueeze(a, 0) : a;
    const Tensor b2 = db == 1 ? unsqueeze(b, 1) : b;
    out = mm(a2, b2);
    if (db == 1) out = squeeze(out, -1);
    if (da == 1) out = squeeze(out, 0);
    return;
  }

  if (da >= 3 && db <= 2) {
    const int64_t K = a.shape()[da - 1];
    Dims out_shape = a.shape();
    const Tensor b2 = db == 1 ? unsqueeze(b, 1) : b;
    const int64_t rows = numel_of(Dims(a.shape().begin(), a.shape().end() - 1));  // a's batch dims fold into M
    const Tensor folded = reshape(a, {rows, K});
    const Tensor product = mm(folded, b2);
    if (db == 1) {
      out_shape.erase(da - 1);
    } else {
      out_shape[da - 1] = b.shape()[1];
    }
    out = view(product, out_shape);
    return;
  }

  // Batched: broadcast the batch dims of both, fold them into one, bmm, unfold.
  const Tensor a3 = da == 1 ? unsqueeze(a, 0) : a;
  const Tensor b3 = db == 1 ? unsqueeze(b, 1) : b;
  const int64_t M = a3.shape()[a3.dim() - 2], K = a3.shape()[a3.dim() - 1], N = b3.shape()[b3.dim() - 1];
  const Dims batch_a(a3.shape().begin(), a3.shape().end() - 2);
  const Dims batch_b(b3.shape().begin(), b3.shape().end() - 2);
  const Dims batch = broadcast_shapes(ops::matmul.name, batch_a, batch_b);
  const int64_t B = numel_of(batch);
  Dims a_shape = batch, b_shape = batch;
  a_shape.push_back(M);
  a_shape.push_back(K);
  b_shape.push_back(K);
  b_shape.push_back(N);
  const Tensor a_folded = batch_a == batch ? reshape(a3, {B, M, K}) : reshape(expand(a3, a_shape), {B, M, K});
  const Tensor b_folded = batch_b == batch ? reshape(b3, {B, K, N}) : reshape(expand(b3, b_shape), {B, K, N});
  const Tensor product = bmm(a_folded, b_folded);
  Dims out_shape = batch;
  if (da > 1) out_shape.push_back(M);
  if (db > 1) out_shape.push_back(N);
  out = view(product, out_shape);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::linear, attrs, loc, {&x, &weight, bias.defined() ? &bias : nullptr});
  return dispatch(call);
}

// As ATen's linear: with a bias, 2-D (or contiguous N-D, folded to 2-D) input
// is one addmm with the bias in the GEMM's epilogue; otherwise matmul (+ add).
void linear_composite(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const Tensor wt = t(w);  // a view: W^T is read in place, never copied
  if (bias != nullptr && x.dim() == 2) {
    out = addmm(*bias, x, wt, 1, 1);
  } else if (bias != nullptr && x.dim() > 2 && x.is_contiguous()) {
    Dims out_shape = x.shape();
    out_shape[x.dim() - 1] = w.shape()[0];
    const int64_t rows = numel_of(Dims(x.shape().begin(), x.shape().end() - 1));  // x's leading dims fold into one
    const Tensor folded = view(x, {rows, x.shape()[x.dim() - 1]});
    out = view(addmm(*bias, folded, wt, 1, 1), out_shape);
  } else {
    out = matmul(x, wt);
    if (bias != nullptr) out = add(out, *bias, 1);
  }
}

Tensor linear_geglu(const Tensor& x, const Tensor& weight, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::linear_geglu, attrs, loc, {&x, &weight});
  return dispatch(call);
}

namespace {
thread_local WgmmaSchedule tl_wgmma_schedule = WgmmaSchedule::automatic;
}  // namespace

WgmmaScheduleOverride::WgmmaScheduleOverride(WgmmaSchedule schedule) : previous_(tl_wgmma_schedule) {
  tl_wgmma_schedule = schedule;
}
WgmmaScheduleOverride::~WgmmaScheduleOverride() { tl_wgmma_schedule = previous_; }
WgmmaSchedule wgmma_schedule_override() { return tl_wgmma_schedule; }
const char* wgmma_schedule_name(WgmmaSchedule schedule) {
  switch (schedule) {
    case WgmmaSchedule::automatic: return "automatic";
    case WgmmaSchedule::cooperative: return "cooperative";
    case WgmmaSchedule::pingpong: return "pingpong";
  }
  return "?";
}

// The merged MLP path's first two kernels: one GEMM for both halves, then geglu reads the
// halves in place.
void linear_geglu_composite(const Tensor& x, const Tensor& w, Tensor& out) {
  const int64_t hidden = w.shape()[0] / 2;
  const Tensor h = linear(x, w, Tensor{});
  const int last = h.dim() - 1;
  out = geglu(narrow(h, last, 0, hidden), narrow(h, last, hidden, hidden));
}

namespace {

#if TS_HAVE_CUDA
// The one-kernel rung writes into an output made here (the composite makes its own).
void linear_geglu_wgmma(const Tensor& x, const Tensor& w, Tensor& out) {
  Dims shape = x.shape();
  shape[x.dim() - 1] = w.shape()[0] / 2;
  out = make_contiguous_tensor(shape, {x.dtype(), x.device()}, "linear_geglu");
  linear_geglu_cuda_wgmma(x, w, out);
}
#endif

Cost mm_cost(const OpCall& call) {
  const Tensor& a = call.input(0);
  const double M = static_cast<double>(a.shape()[0]), K = static_cast<double>(a.shape()[1]),
               N = static_cast<double>(call.input(1).shape()[1]);
  const double es = static_cast<double>(a.element_size());
  return {2 * M * N * K, (M * K + K * N + M * N) * es};
}

Cost bmm_cost(const OpCall& call) {
  const Tensor& a = call.input(0);
  const double B = static_cast<double>(a.shape()[0]), M = static_cast<double>(a.shape()[1]),
               K = static_cast<double>(a.shape()[2]), N = static_cast<double>(call.input(1).shape()[2]);
  const double es = static_cast<double>(a.element_size());
  return {2 * B * M * N * K, B * (M * K + K * N + M * N) * es};
}

Cost addmm_cost(const OpCall& call) {
  const Tensor& a = call.input(1);
  const double M = static_cast<double>(a.shape()[0]), K = static_cast<double>(a.shape()[1]),
               N = static_cast<double>(call.input(2).shape()[1]);
  const double es = static_cast<double>(a.element_size());
  // FLOPs as PyTorch counts them for addmm: the product only.
  return {2 * M * N * K, (M * K + K * N + M * N + static_cast<double>(call.input(0).numel())) * es};
}

// Product of the broadcast of a's and b's batch dims (all but the last two).
double broadcast_batch(const Dims& a, const Dims& b) {
  const int na = std::max(a.size() - 2, 0), nb = std::max(b.size() - 2, 0);
  double batch = 1;
  for (int i = 0; i < std::max(na, nb); ++i) {
    const int64_t da = i < na ? a[na - 1 - i] : 1;
    const int64_t db = i < nb ? b[nb - 1 - i] : 1;
    batch *= static_cast<double>(std::max(da, db));
  }
  return batch;
}

// matmul: the GEMM it runs. [..., M, K] @ [..., K, N]; a 1-D operand is one row / one column.
Cost matmul_cost(const OpCall& call) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const double K = static_cast<double>(a.shape().back());
  const double M = a.dim() >= 2 ? static_cast<double>(a.shape()[a.dim() - 2]) : 1;
  const double N = b.dim() >= 2 ? static_cast<double>(b.shape().back()) : 1;
  const double es = static_cast<double>(a.element_size());
  const double batch = broadcast_batch(a.shape(), b.dim() >= 2 ? b.shape() : Dims{});
  return {2 * batch * M * N * K, batch * (M * K + K * N + M * N) * es};
}

// linear: x [*, in] @ W^T [in, out] (+ bias).
Cost linear_cost(const OpCall& call) {
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  double rows = 1;  // every dim of x but the last
  for (int i = 0; i + 1 < x.dim(); ++i) rows *= static_cast<double>(x.shape()[i]);
  const double in = static_cast<double>(w.shape()[1]), out = static_cast<double>(w.shape()[0]);
  const double es = static_cast<double>(x.element_size());
  const double bias = call.in[2] != nullptr ? out : 0;
  return {2 * rows * in * out, (rows * in + in * out + rows * out + bias) * es};
}

// linear_geglu: the GEMM x [*, in] @ W^T [in, 2H] (+ the GeGLU's few FLOPs, not counted); x and
// W read once, only the [*, H] product written.
Cost linear_geglu_cost(const OpCall& call) {
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  const double in = static_cast<double>(w.shape()[1]), two_h = static_cast<double>(w.shape()[0]);
  const double rows = in > 0 ? static_cast<double>(x.numel()) / in : 0;
  const double es = static_cast<double>(x.element_size());
  return {2 * rows * in * two_h, (rows * in + in * two_h + rows * two_h / 2) * es};
}

// with_flops reports the GEMM's FLOPs for all six.
int64_t gemm_flops(const OpCall& call) { return std::llround(call.op.cost(call).flops); }

// addmm(self, mat1, mat2, beta, alpha) records beta and alpha after the tensors.
void addmm_scalars(const OpCall& call, std::vector<double>& out) {
  const AddmmAttrs& attrs = call.attrs<AddmmAttrs>();
  out.push_back(attrs.beta);
  out.push_back(attrs.alpha);
}

using enum VariantDevice;

// clang-format off
const Variant mm_rungs[] = {
  {"mm/cpu/ref",         &ops::mm,     cpu,  0, no_gpu, "triple loop over strided operands, double accumulator: the oracle", nullptr,                   run_kernel<&mm_cpu_ref>, "ops/matmul/matmul_cpu_ref.cpp"},
  {"mm/cpu/openblas",    &ops::mm,     cpu,  1, no_gpu, "OpenBLAS sgemm; t() views read in place as transposed operands", nullptr,                   run_kernel<&mm_cpu_openblas>, "ops/matmul/matmul_cpu_openblas.cpp"},
#if TS_HAVE_CUDA
  {"mm/cuda/naive",      &ops::mm,     cuda, 2, sm75,   "one thread per output, a K loop over strided operands",         nullptr,                   run_kernel<&mm_cuda_naive>, "ops/matmul/matmul_cuda_naive.cu"},
  {"mm/cuda/tiled",      &ops::mm,     cuda, 3, sm75,   "32x32 shared-memory tiles: each load reused 32 times",          nullptr,                   run_kernel<&mm_cuda_tiled>, "ops/matmul/matmul_cuda_tiled.cu"},
  {"mm/cuda/mma",        &ops::mm,     cuda, 4, sm80,   "tensor cores via mma.sync + ldmatrix, cp.async 3-stage ring",  gemm_cuda_mma_supports,    run_kernel<&mm_cuda_mma>, "ops/matmul/matmul_cuda_mma.cu"},
  {"mm/cuda/wgmma",      &ops::mm,     cuda, 5, sm90a,  "Hopper: TMA + mbarrier ring, wgmma, warp-specialized, persistent", gemm_cuda_wgmma_supports, run_kernel<&mm_cuda_wgmma>, "ops/matmul/matmul_cuda_wgmma.cu"},
  {"mm/cuda/cublas",     &ops::mm,     cuda, 6, sm75,   "cuBLASLt tensor cores; t() views read in place by layout",      gemm_cuda_cublas_supports, run_kernel<&mm_cuda_cublas>, "ops/matmul/matmul_cuda_cublas.cpp"},
#endif
};
const Variant bmm_rungs[] = {
  {"bmm/cpu/ref",        &ops::bmm,    cpu,  0, no_gpu, "the mm triple loop per batch",                                   nullptr,                   run_kernel<&bmm_cpu_ref>, "ops/matmul/matmul_cpu_ref.cpp"},
  {"bmm/cpu/openblas",   &ops::bmm,    cpu,  1, no_gpu, "OpenBLAS sgemm per batch",                                       nullptr,                   run_kernel<&bmm_cpu_openblas>, "ops/matmul/matmul_cpu_openblas.cpp"},
#if TS_HAVE_CUDA
  {"bmm/cuda/naive",     &ops::bmm,    cuda, 2, sm75,   "one thread per output, a K loop over strided operands",         nullptr,                   run_kernel<&bmm_cuda_naive>, "ops/matmul/matmul_cuda_naive.cu"},
  {"bmm/cuda/tiled",     &ops::bmm,    cuda, 3, sm75,   "32x32 shared-memory tiles: each load reused 32 times",          nullptr,                   run_kernel<&bmm_cuda_tiled>, "ops/matmul/matmul_cuda_tiled.cu"},
  {"bmm/cuda/mma",       &ops::bmm,    cuda, 4, sm80,   "tensor cores via mma.sync + ldmatrix, cp.async 3-stage ring",  gemm_cuda_mma_supports,    run_kernel<&bmm_cuda_mma>, "ops/matmul/matmul_cuda_mma.cu"},
  {"bmm/cuda/wgmma",     &ops::bmm,    cuda, 5, sm90a,  "Hopper: TMA + mbarrier ring, wgmma, warp-specialized, persistent", gemm_cuda_wgmma_supports, run_kernel<&bmm_cuda_wgmma>, "ops/matmul/matmul_cuda_wgmma.cu"},
  {"bmm/cuda/cublas",    &ops::bmm,    cuda, 6, sm75,   "cuBLASLt tensor cores; t() views read in place by layout",      gemm_cuda_cublas_supports, run_kernel<&bmm_cuda_cublas>, "ops/matmul/matmul_cuda_cublas.cpp"},
#endif
};
const Variant matmul_rungs[] = {
  {"matmul/any/composite", &ops::matmul, any, 0, no_gpu, "torch.matmul's rules: mm for 2-D, bmm over broadcast batches",  nullptr,                   run_kernel<&matmul_composite>, "ops/matmul/matmul.cpp"},
};
const Variant addmm_rungs[] = {
  {"addmm/cpu/ref",      &ops::addmm,  cpu,  0, no_gpu, "beta*C + alpha*(A@B), one triple loop",                          nullptr,                   run_kernel<&addmm_cpu_ref>, "ops/matmul/matmul_cpu_ref.cpp"},
  {"addmm/cpu/openblas", &ops::addmm,  cpu,  1, no_gpu, "C broadcast into out, then sgemm with beta: one pass",          nullptr,                   run_kernel<&addmm_cpu_openblas>, "ops/matmul/matmul_cpu_openblas.cpp"},
#if TS_HAVE_CUDA
  {"addmm/cuda/naive",   &ops::addmm,  cuda, 2, sm75,   "one thread per output, a K loop over strided operands",         nullptr,                   run_kernel<&addmm_cuda_naive>, "ops/matmul/matmul_cuda_naive.cu"},
  {"addmm/cuda/tiled",   &ops::addmm,  cuda, 3, sm75,   "32x32 shared-memory tiles: each load reused 32 times",          nullptr,                   run_kernel<&addmm_cuda_tiled>, "ops/matmul/matmul_cuda_tiled.cu"},
  {"addmm/cuda/mma",     &ops::addmm,  cuda, 4, sm80,   "mma.sync rung; beta*C + alpha*AB in its epilogue",               gemm_cuda_mma_supports,    run_kernel<&addmm_cuda_mma>, "ops/matmul/matmul_cuda_mma.cu"},
  {"addmm/cuda/wgmma",   &ops::addmm,  cuda, 5, sm90a,  "wgmma rung; beta*C + alpha*AB (a bias row too) in its epilogue", gemm_cuda_wgmma_supports, run_kernel<&addmm_cuda_wgmma>, "ops/matmul/matmul_cuda_wgmma.cu"},
  {"addmm/cuda/cublas",  &ops::addmm,  cuda, 6, sm75,   "cuBLASLt; t() read in place; bias epilogue, C as beta=1",       gemm_cuda_cublas_supports, run_kernel<&addmm_cuda_cublas>, "ops/matmul/matmul_cuda_cublas.cpp"},
#endif
};
const Variant linear_rungs[] = {
  {"linear/any/composite", &ops::linear, any, 0, no_gpu, "t(W) view + addmm (bias) or matmul (no bias)",                  nullptr,                   run_kernel<&linear_composite>, "ops/matmul/matmul.cpp"},
};
const Variant linear_geglu_rungs[] = {
  {"linear_geglu/any/composite", &ops::linear_geglu, any, 0, no_gpu, "linear on [gate; up], then geglu on its halves: 2 kernels", nullptr, run_kernel<&linear_geglu_composite>, "ops/matmul/matmul.cpp"},
#if TS_HAVE_CUDA
  {"linear_geglu/cuda/wgmma",    &ops::linear_geglu, cuda, 1, sm90a,  "one wgmma GEMM computes gate and up per tile, writes gelu(gate)*up", linear_geglu_cuda_wgmma_supports, run_kernel<&linear_geglu_wgmma>, "ops/matmul/matmul_cuda_wgmma.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef mm{.name = "ts::mm", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_mm, .rungs = mm_rungs,
               .cost = mm_cost, .profiled_flops = gemm_flops};
const OpDef bmm{.name = "ts::bmm", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_bmm, .rungs = bmm_rungs,
                .cost = bmm_cost, .profiled_flops = gemm_flops};
const OpDef matmul{.name = "ts::matmul", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_matmul,
                   .rungs = matmul_rungs, .cost = matmul_cost, .profiled_flops = gemm_flops};
const OpDef addmm{.name = "ts::addmm", .attrs = attrs_tag<AddmmAttrs>, .prepare = prepare_addmm,
                  .rungs = addmm_rungs, .cost = addmm_cost, .profiled_flops = gemm_flops,
                  .scalar_args = addmm_scalars};
const OpDef linear{.name = "ts::linear", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_linear,
                   .rungs = linear_rungs, .cost = linear_cost, .profiled_flops = gemm_flops};
const OpDef linear_geglu{.name = "ts::linear_geglu", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_linear_geglu,
                         .rungs = linear_geglu_rungs, .cost = linear_geglu_cost, .profiled_flops = gemm_flops};
}  // namespace ops

}  // namespace ts
