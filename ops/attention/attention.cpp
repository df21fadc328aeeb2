// ops/attention/attention.cpp: scaled_dot_product_attention and its math
// decomposition (rung 0, the reference every fused kernel is checked against).
//
// Letters: q [*, S, D], k [*, L, D], v [*, L, Dv] -> out [*, S, Dv]; S queries,
// L keys, D the head dim. The math path, op by op (each one shows in the
// profiler, and the [*, S, L] scores live in memory between them):
//   scores = matmul(q, k^T) * scale
//   causal:  masked_fill(scores, triu(ones(S, L), 1), -inf)   // future keys
//   bool mask (true = attend): where(mask, scores, -inf); float mask: scores + mask
//   out = matmul(_safe_softmax(scores, -1), v)                 // masked-out rows give 0
#include <cmath>
#include <limits>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

namespace ts {

namespace {

void prepare_sdpa(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& q = call.input(0);
  const Tensor& k = call.input(1);
  const Tensor& v = call.input(2);
  TS_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
           "scaled_dot_product_attention: q, k, v need at least 2 dims [*, seq, head_dim], got {}, {}, {}", q.shape(),
           k.shape(), v.shape());
  TS_CHECK(q.shape().back() == k.shape().back(),
           "scaled_dot_product_attention: q and k must share the head dim, got q {} and k {}", q.shape(), k.shape());
  TS_CHECK(k.shape()[k.dim() - 2] == v.shape()[v.dim() - 2],
           "scaled_dot_product_attention: k and v must have the same sequence length, got k {} and v {}", k.shape(),
           v.shape());
  check_floating(call, q, "q");
  check_same_dtype(call, q, k);
  check_same_dtype(call, q, v);
  const Tensor* mask = call.in[3];
  TS_CHECK(!(mask && call.causal),
           "scaled_dot_product_attention: pass either attn_mask or is_causal=true, not both");
  if (mask) {
    TS_CHECK(mask->dtype() == DType::b8 || mask->dtype() == q.dtype(),
             "scaled_dot_product_attention: attn_mask must be bool or {} like q, got {}", dtype_short_name(q.dtype()),
             dtype_short_name(mask->dtype()));
  }
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    bool is_causal, double scale, Where loc) {
  OpCall call(OpId::scaled_dot_product_attention, loc, {&q, &k, &v, attn_mask.defined() ? &attn_mask : nullptr});
  call.causal = is_causal;
  call.attn_scale = scale;
  return dispatch(call, prepare_sdpa);
}

void sdpa_math_composite(OpCall& call) {
  const Where loc = call.loc;
  const Tensor& q = call.input(0);
  const Tensor& k = call.input(1);
  const Tensor& v = call.input(2);
  const int64_t S = q.shape()[q.dim() - 2], L = k.shape()[k.dim() - 2], D = q.shape().back();
  const double scale = call.attn_scale != 0 ? call.attn_scale : 1.0 / std::sqrt(static_cast<double>(D));
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  Tensor scores = mul(matmul(q, transpose(k, -2, -1, loc), loc), scale, loc);
  if (call.causal) {
    // Key j is in query i's future when j > i: the strict upper triangle.
    Tensor future = triu(ones({S, L}, {DType::b8, call.device}, loc), 1, loc);
    scores = masked_fill(scores, future, kNegInf, loc);
  } else if (const Tensor* mask = call.in[3]) {
    if (mask->dtype() == DType::b8) {
      scores = where(*mask, scores, full({}, kNegInf, {scores.dtype(), call.device}, loc), loc);
    } else {
      scores = add(scores, *mask, 1, loc);
    }
  }
  call.out = matmul(_safe_softmax(scores, -1, loc), v, loc);
}

Cost sdpa_cost(const OpCall& call) {
  const Tensor& q = call.input(0);
  const Tensor& v = call.input(2);
  const double S = static_cast<double>(q.shape()[q.dim() - 2]), D = static_cast<double>(q.shape().back());
  const double L = static_cast<double>(v.shape()[v.dim() - 2]), Dv = static_cast<double>(v.shape().back());
  const double batch = static_cast<double>(q.numel()) / (S * D);
  const double es = static_cast<double>(q.element_size());
  // Two matrix products (q k^T and p v); bytes: q, k, v read once and out written once.
  return {batch * 2 * S * L * (D + Dv), (static_cast<double>(q.numel() + call.input(1).numel() + v.numel()) +
                                         batch * S * Dv) * es};
}

}  // namespace ts
