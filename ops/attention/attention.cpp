// ops/attention/attention.cpp: scaled_dot_product_attention and its math
// decomposition (rung 0, the reference every fused kernel is checked against).
//
// The math rung runs the way PyTorch's math backend runs (sdpa_kernel(SDPBackend.MATH)),
// op by op; each one shows in the profiler, and the [*, S, L] scores live in memory between them:
//   bf16/f16 inputs: q, k, v = to(q, f32), to(k, f32), to(v, f32)   // accuracy over speed
//   q, k = q * sqrt(scale), k * sqrt(scale)      // scaled before the product, as PyTorch does
//   scores = matmul(q, k^T)                      // f32: no tensor cores unless TF32 is allowed
//   causal:  masked_fill_(scores, triu(ones(S, L), 1), -inf)  // the mask rebuilt on every call
//   bool mask (true = attend): where(mask, scores, -inf); float mask: scores + mask
//   out = matmul(_safe_softmax(scores, -1), v)   // a row with no visible key gives 0, not NaN
//   bf16/f16 inputs: out = to(out, dtype)
// On a GPU, bf16 and causal, that is 12 kernels: 4 casts, 2 scalings, 2 GEMMs, 3 for the mask,
// 1 softmax (nn/attention.cpp's expected_launches lists them).
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

#if TS_HAVE_CUDA
// The fused rungs take q, k, v as [B, H, S, D] and is_causal; an attn_mask stays on the math rung.
template <bool (*Supports)(const Tensor&, const Tensor&, const Tensor&, const SdpaAttrs&, std::string*)>
bool fused_supports(const OpCall& call, std::string* why) {
  if (call.in[3] != nullptr) {
    if (why) *why = "an attn_mask runs on the math rung (the fused rungs take is_causal or no mask)";
    return false;
  }
  return Supports(call.input(0), call.input(1), call.input(2), call.attrs<SdpaAttrs>(), why);
}
#endif

using enum VariantDevice;

// clang-format off
const Variant sdpa_rungs[] = {
  {"scaled_dot_product_attention/any/math",      &ops::scaled_dot_product_attention, any,  0, no_gpu,
   "PyTorch's math backend: f32 for bf16/f16, q and k scaled, matmul, mask rebuilt, safe softmax, matmul",
   nullptr,                                            run_kernel<&sdpa_math_composite>, "ops/attention/attention.cpp"},
#if TS_HAVE_CUDA
  {"scaled_dot_product_attention/cuda/flash_v1", &ops::scaled_dot_product_attention, cuda, 1, sm75,
   "one kernel: K/V tiles through shared memory, online softmax, scalar f32 FMAs",
   fused_supports<sdpa_cuda_flash_v1_supports>,         run_kernel<&sdpa_flash_v1>, "ops/attention/attention_cuda_flash_v1.cu"},
  {"scaled_dot_product_attention/cuda/flash_v2", &ops::scaled_dot_product_attention, cuda, 2, sm80,
   "tensor cores: mma.sync, ldmatrix, cp.async double buffering, causal tiles skipped",
   fused_supports<sdpa_cuda_flash_v2_supports>,         run_kernel<&sdpa_flash_v2>, "ops/attention/attention_cuda_flash_v2.cu"},
  {"scaled_dot_product_attention/cuda/flash_v3", &ops::scaled_dot_product_attention, cuda, 3, sm90a,
   "Hopper (sm_90a): TMA into a K/V ring, a producer and 2-3 consumer warpgroups, wgmma, ping-pong softmax",
   fused_supports<sdpa_cuda_flash_v3_supports>,         run_kernel<&sdpa_flash_v3>, "ops/attention/attention_cuda_flash_v3.cu"},
#endif
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

void sdpa_math_composite(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                         const SdpaAttrs& attrs, Tensor& out) {
  const int64_t S = q.shape()[q.dim() - 2], L = k.shape()[k.dim() - 2], D = q.shape().back();
  const double scale = attrs.scale != 0 ? attrs.scale : 1.0 / std::sqrt(static_cast<double>(D));
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  // 16-bit inputs are computed in f32 and the result rounded once at the end; f32 runs as it is.
  const DType dtype = q.dtype();
  const bool upcast = dtype == DType::bf16 || dtype == DType::f16;
  const Tensor qf = upcast ? to(q, DType::f32) : q;
  const Tensor kf = upcast ? to(k, DType::f32) : k;
  const Tensor vf = upcast ? to(v, DType::f32) : v;

  // sqrt(|scale|) on each side (the sign on q's): two passes over [*, S, D] and [*, L, D],
  // none over the [*, S, L] scores, and the product's terms stay near 1 in magnitude.
  const double root = std::sqrt(std::abs(scale));
  Tensor scores = matmul(mul(qf, scale < 0 ? -root : root), transpose(mul(kf, root), -2, -1));
  if (attrs.is_causal) {
    // Key j is in query i's future when j > i: the strict upper triangle, built again on every call.
    const Tensor future = triu(ones({S, L}, {DType::b8, q.device()}), 1);
    masked_fill_(scores, future, kNegInf);
  } else if (mask != nullptr) {
    if (mask->dtype() == DType::b8) {
      scores = where(*mask, scores, full({}, kNegInf, {DType::f32, q.device()}));
    } else {
      scores = add(scores, upcast ? to(*mask, DType::f32) : *mask, 1);
    }
  }
  const Tensor result = matmul(_safe_softmax(scores, -1), vf);
  out = upcast ? to(result, dtype) : result;
}

}  // namespace ts
