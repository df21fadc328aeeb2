// ops/attention/attention.cpp: scaled_dot_product_attention and its math
// decomposition (rung 0, the reference every fused kernel is checked against).
//
// The math path, op by op (each one shows in the
// profiler, and the [*, S, L] scores live in memory between them):
//   scores = matmul(q, k^T) * scale
//   causal:  masked_fill(scores, triu(ones(S, L), 1), -inf)   // future keys
//   bool mask (true = attend): where(mask, scores, -inf); float mask: scores + mask
//   out = matmul(_safe_softmax(scores, -1), v)                 // masked-out rows give 0
#include "ops/attention/attention.h"

#include "ops/attention/attention_flash.h"

#include <cmath>
#include <limits>

#include "ops/checks.h"
#include "ops/dispatch.h"

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
  TS_CHECK(!(mask && call.attrs<SdpaAttrs>().is_causal),
           "scaled_dot_product_attention: pass either attn_mask or is_causal=true, not both");
  if (mask) {
    TS_CHECK(mask->dtype() == DType::b8 || mask->dtype() == q.dtype(),
             "scaled_dot_product_attention: attn_mask must be bool or {} like q, got {}", dtype_short_name(q.dtype()),
             dtype_short_name(mask->dtype()));
  }
}

// Two matrix products (q k^T and p v); a causal call needs half of them (the
// convention of the flash-attention papers: 4 B H S^2 D / 2 for S = L, D = Dv).
// Bytes: q, k, v read once and out written once.
Cost sdpa_cost(const OpCall& call) {
  const Tensor& q = call.input(0);
  const Tensor& v = call.input(2);
  const double S = static_cast<double>(q.shape()[q.dim() - 2]), D = static_cast<double>(q.shape().back());
  const double L = static_cast<double>(v.shape()[v.dim() - 2]), Dv = static_cast<double>(v.shape().back());
  const double batch = S * D > 0 ? static_cast<double>(q.numel()) / (S * D) : 0;
  const double es = static_cast<double>(q.element_size());
  const double share = call.attrs<SdpaAttrs>().is_causal ? 0.5 : 1.0;
  return {share * batch * 2 * S * L * (D + Dv),
          (static_cast<double>(q.numel() + call.input(1).numel() + v.numel()) + batch * S * Dv) * es};
}

int64_t sdpa_flops(const OpCall& call) { return std::llround(sdpa_cost(call).flops); }

// The fused rungs take q, k, v as [B, H, S, D] and is_causal; an attn_mask stays on the math rung.
template <bool (*Supports)(const Tensor&, const Tensor&, const Tensor&, const SdpaAttrs&, std::string*)>
bool fused_supports(const OpCall& call, std::string* why) {
  if (call.in[3] != nullptr) {
    if (why) *why = "an attn_mask runs on the math rung (the fused rungs take is_causal or no mask)";
    return false;
  }
  return Supports(call.input(0), call.input(1), call.input(2), call.attrs<SdpaAttrs>(), why);
}

using enum VariantDevice;

// clang-format off
const Variant sdpa_rungs[] = {
  {"scaled_dot_product_attention/any/math",      &ops::scaled_dot_product_attention, any,  0,
   "matmul, scale, mask, safe softmax, matmul: the [S, L] scores in memory",
   nullptr,                                            run_kernel<&sdpa_math_composite>},
  {"scaled_dot_product_attention/cuda/flash_v1", &ops::scaled_dot_product_attention, cuda, 1,
   "one kernel: K/V tiles through shared memory, online softmax, scalar f32 FMAs",
   fused_supports<sdpa_cuda_flash_v1_supports>,         run_kernel<&sdpa_flash_v1>},
  {"scaled_dot_product_attention/cuda/flash_v2", &ops::scaled_dot_product_attention, cuda, 2,
   "tensor cores: mma.sync, ldmatrix, cp.async double buffering, causal tiles skipped",
   fused_supports<sdpa_cuda_flash_v2_supports>,         run_kernel<&sdpa_flash_v2>},
};
// clang-format on

}  // namespace

namespace ops {
const OpDef scaled_dot_product_attention{.name = "ts::scaled_dot_product_attention",
                                         .attrs = attrs_tag<SdpaAttrs>,
                                         .prepare = prepare_sdpa,
                                         .rungs = sdpa_rungs,
                                         .cost = sdpa_cost,
                                         .profiled_flops = sdpa_flops};
}  // namespace ops

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    bool is_causal, double scale, Where loc) {
  const SdpaAttrs attrs{is_causal, scale};
  OpCall call(ops::scaled_dot_product_attention, attrs, loc,
              {&q, &k, &v, attn_mask.defined() ? &attn_mask : nullptr});
  return dispatch(call);
}

// The fused rungs write a fresh [B, H, S, D] output (the math rung returns its last matmul's).
void sdpa_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  out = make_contiguous_tensor(q.shape(), {q.dtype(), q.device()});
  sdpa_cuda_flash_v1(q, k, v, attrs, out);
}

void sdpa_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  out = make_contiguous_tensor(q.shape(), {q.dtype(), q.device()});
  sdpa_cuda_flash_v2(q, k, v, attrs, out);
}

void sdpa_math_composite(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                         const SdpaAttrs& attrs, Tensor& out) {
  const int64_t S = q.shape()[q.dim() - 2], L = k.shape()[k.dim() - 2], D = q.shape().back();
  const double scale = attrs.scale != 0 ? attrs.scale : 1.0 / std::sqrt(static_cast<double>(D));
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), scale);
  if (attrs.is_causal) {
    // Key j is in query i's future when j > i: the strict upper triangle.
    Tensor future = triu(ones({S, L}, {DType::b8, q.device()}), 1);
    scores = masked_fill(scores, future, kNegInf);
  } else if (mask != nullptr) {
    if (mask->dtype() == DType::b8) {
      scores = where(*mask, scores, full({}, kNegInf, {scores.dtype(), q.device()}));
    } else {
      scores = add(scores, *mask, 1);
    }
  }
  out = matmul(_safe_softmax(scores, -1), v);
}

}  // namespace ts
