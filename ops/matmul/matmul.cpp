// ops/matmul/matmul.cpp: front end of mm, bmm, addmm, and the composites matmul and linear.
//
// Letters: out is M x N, the reduction runs over K, B counts batches.
//   mm:     a [M, K] @ b [K, N] -> [M, N]
//   bmm:    a [B, M, K] @ b [B, K, N] -> [B, M, N]
//   addmm:  beta * c + alpha * (a @ b); c is [N] (a bias row) or broadcastable to [M, N]
//   matmul: torch.matmul's rules (below); linear: x W^T + bias.
// Attributes used: alpha, beta (addmm).
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

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
  call.out = make_contiguous_tensor({a.shape()[0], b.shape()[1]}, {a.dtype(), call.device});
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
  call.out = make_contiguous_tensor({a.shape()[0], a.shape()[1], b.shape()[2]}, {a.dtype(), call.device});
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
  call.out = make_contiguous_tensor(out_shape, {a.dtype(), call.device});
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

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b, Where loc) {
  OpCall call(OpId::mm, loc, {&a, &b});
  return dispatch(call, prepare_mm);
}

Tensor bmm(const Tensor& a, const Tensor& b, Where loc) {
  OpCall call(OpId::bmm, loc, {&a, &b});
  return dispatch(call, prepare_bmm);
}

Tensor addmm(const Tensor& c, const Tensor& a, const Tensor& b, double beta, double alpha, Where loc) {
  OpCall call(OpId::addmm, loc, {&c, &a, &b});
  call.beta = beta;
  call.alpha = alpha;
  return dispatch(call, prepare_addmm);
}

Tensor matmul(const Tensor& a, const Tensor& b, Where loc) {
  OpCall call(OpId::matmul, loc, {&a, &b});
  return dispatch(call, prepare_matmul);
}

// torch.matmul, case by case (as in ATen's matmul):
//   1-D operands become [1, K] / [K, 1] matrices and the added dim is dropped after;
//   2-D @ 2-D is mm;
//   N-D @ 1-D or 2-D folds a's batch dims into M: one mm on a [B*M, K] view;
//   otherwise batch dims broadcast, fold into one, and bmm runs.
void matmul_composite(OpCall& call) {
  const Where loc = call.loc;
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const int da = a.dim(), db = b.dim();

  if (da <= 2 && db <= 2) {
    const Tensor a2 = da == 1 ? unsqueeze(a, 0, loc) : a;
    const Tensor b2 = db == 1 ? unsqueeze(b, 1, loc) : b;
    Tensor out = mm(a2, b2, loc);
    if (db == 1) out = squeeze(out, -1, loc);
    if (da == 1) out = squeeze(out, 0, loc);
    call.out = out;
    return;
  }

  if (da >= 3 && db <= 2) {
    const int64_t K = a.shape()[da - 1];
    Dims out_shape = a.shape();
    const Tensor b2 = db == 1 ? unsqueeze(b, 1, loc) : b;
    const Tensor folded = reshape(a, {-1, K}, loc);
    Tensor out = mm(folded, b2, loc);
    if (db == 1) {
      out_shape.erase(da - 1);
    } else {
      out_shape[da - 1] = b.shape()[1];
    }
    call.out = view(out, out_shape, loc);
    return;
  }

  // Batched: broadcast the batch dims of both, fold them into one, bmm, unfold.
  const Tensor a3 = da == 1 ? unsqueeze(a, 0, loc) : a;
  const Tensor b3 = db == 1 ? unsqueeze(b, 1, loc) : b;
  const int64_t M = a3.shape()[a3.dim() - 2], K = a3.shape()[a3.dim() - 1], N = b3.shape()[b3.dim() - 1];
  const Dims batch_a(a3.shape().begin(), a3.shape().end() - 2);
  const Dims batch_b(b3.shape().begin(), b3.shape().end() - 2);
  const Dims batch = broadcast_shapes(call, batch_a, batch_b);
  const int64_t B = numel_of(batch);
  Dims a_shape = batch, b_shape = batch;
  a_shape.push_back(M);
  a_shape.push_back(K);
  b_shape.push_back(K);
  b_shape.push_back(N);
  const Tensor a_folded = batch_a == batch ? reshape(a3, {B, M, K}, loc) : reshape(expand(a3, a_shape, loc), {B, M, K}, loc);
  const Tensor b_folded = batch_b == batch ? reshape(b3, {B, K, N}, loc) : reshape(expand(b3, b_shape, loc), {B, K, N}, loc);
  Tensor out = bmm(a_folded, b_folded, loc);
  Dims out_shape = batch;
  if (da > 1) out_shape.push_back(M);
  if (db > 1) out_shape.push_back(N);
  call.out = view(out, out_shape, loc);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Where loc) {
  OpCall call(OpId::linear, loc, {&x, &weight, bias.defined() ? &bias : nullptr});
  return dispatch(call, prepare_linear);
}

// As ATen's linear: with a bias, 2-D (or contiguous N-D, folded to 2-D) input
// is one addmm with the bias in the GEMM's epilogue; otherwise matmul (+ add).
void linear_composite(OpCall& call) {
  const Where loc = call.loc;
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  const Tensor* bias = call.in[2];
  const Tensor wt = t(w, loc);  // a view: W^T is read in place, never copied
  if (bias != nullptr && x.dim() == 2) {
    call.out = addmm(*bias, x, wt, 1, 1, loc);
  } else if (bias != nullptr && x.dim() > 2 && x.is_contiguous()) {
    Dims out_shape = x.shape();
    out_shape[x.dim() - 1] = w.shape()[0];
    const Tensor folded = view(x, {-1, x.shape()[x.dim() - 1]}, loc);
    call.out = view(addmm(*bias, folded, wt, 1, 1, loc), out_shape, loc);
  } else {
    call.out = matmul(x, wt, loc);
    if (bias != nullptr) call.out = add(call.out, *bias, 1, loc);
  }
}

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

}  // namespace ts
