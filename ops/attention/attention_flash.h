// ops/attention/attention_flash.h: the flash-attention rungs of scaled_dot_product_attention on CUDA.
//
//   out = softmax(q k^T * scale [+ causal mask]) v, one fused kernel, the [S, L] scores never in memory.
//
//   flash_v1  attention_cuda_flash_v1.cu  online softmax over K/V tiles in shared memory, scalar f32 FMAs
//   flash_v2  attention_cuda_flash_v2.cu  the same algorithm on tensor cores (mma.sync m16n8k16, ldmatrix,
//                                         cp.async double buffering), head dims 64 and 128
//
// Letters as in attention.h: B batch, H heads, S queries, L keys, D head dim.
// Tensor arguments (4-D; the caller flattens other ranks):
//   q    [B, H, S, D]  bf16 or f16, any strides (v2: the last dim must have stride 1, every other
//                      stride a multiple of 8 elements, the data 16-byte aligned). A [B, S, H, D]
//                      tensor transposed to [B, H, S, D] is read in place: no copy.
//   k    [B, H, L, D]  same dtype and device as q, same stride rules
//   v    [B, H, L, D]  same
//   out  [B, H, S, D]  contiguous, same dtype and device, allocated by the caller; every element is written
//
// Masking follows PyTorch's is_causal: the mask is tril(ones(S, L)), aligned top-left, so query i sees
// keys j <= i (when S > L, queries i >= L see every key). A query with no visible key (L == 0) gets 0,
// like the safe softmax of the math path. A NaN in a query row makes that row's output NaN.
#pragma once

#include <string>

#include "ops/attention/attention.h"

namespace ts {

// Launch the kernel on the current stream (asynchronous). Throw ts::Error with the
// reason when the rung cannot run the call (see *_supports) or out is not as above.
void sdpa_cuda_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);
void sdpa_cuda_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);

// False (and the reason in *why when not null) for calls the rung cannot run: shapes,
// dtype, head dim, strides, device. They touch no GPU: they answer on any machine.
bool sdpa_cuda_flash_v1_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why);
bool sdpa_cuda_flash_v2_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why);

}  // namespace ts
