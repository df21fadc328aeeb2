// ops/attention/attention.h: scaled_dot_product_attention: its attributes, its
// OpDef and the entry point of every rung of its ladder.
//
// Letters: q [*, S, D], k [*, L, D], v [*, L, Dv] -> out [*, S, Dv]; S queries,
// L keys, D the head dim; B and H the batch and head dims of the fused rungs.
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct SdpaAttrs {
  bool is_causal = false;  // query i sees keys j <= i (PyTorch's top-left tril(ones(S, L)) mask)
  double scale = 0;        // 0: 1 / sqrt(D)
};

namespace ops {
extern const OpDef scaled_dot_product_attention;  // SdpaAttrs; inputs: q, k, v, attn_mask (optional)
}  // namespace ops

// attn_mask: bool (true = attend) or q's dtype (added), broadcastable to [*, S, L]; null for none.
void sdpa_math_composite(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* attn_mask,
                         const SdpaAttrs& attrs, Tensor& out);
// The fused rungs: attention_flash.h.

}  // namespace ts
