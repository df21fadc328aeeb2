// ops/attention/attention_flash.h: the flash-attention rungs of scaled_dot_product_attention on CUDA.
//
//   out = softmax(q k^T * scale [+ causal mask]) v, one fused kernel, the [S, L] scores never in memory.
//
//   flash_v1  attention_cuda_flash_v1.cu  online softmax over K/V tiles in shared memory, scalar f32 FMAs
//   flash_v2  attention_cuda_flash_v2.cu  the same algorithm on tensor cores (mma.sync m16n8k16, ldmatrix,
//                                         cp.async double buffering), head dims 64, 96 and 128
//   flash_v3  attention_cuda_flash_v3.cu  Hopper's own (sm_90a): TMA loads into a ring of stages, a
//                                         producer warpgroup and two consumer warpgroups, wgmma for
//                                         both products, the softmax overlapped with the tensor cores
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

// Two entries per rung, one kernel behind both:
//   sdpa_flash_vN       the rung (its Variant::run in attention.cpp's table). Dispatch has asked the
//                       rung's accepts() (its GPU needs, then sdpa_cuda_flash_vN_supports) once for
//                       this call, so it asks nothing again: it allocates out ([B, H, S, D]
//                       contiguous, every element written) and launches.
//   sdpa_cuda_flash_vN  the typed launcher for direct calls (tests, benchmarks), into a caller's out
//                       as above: nothing asked before it, so it asks supports() and what the GPU
//                       needs itself, and throws ts::Error with the reason.
// Both launch on the current stream (asynchronous) and throw when out is not as above.
void sdpa_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);
void sdpa_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);
void sdpa_flash_v3(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);
void sdpa_cuda_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);
void sdpa_cuda_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);
void sdpa_cuda_flash_v3(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out);

// False (and the reason in *why when not null) for calls the rung cannot run: shapes,
// dtype, head dim, strides, device. They answer on any machine: the device checks come last (flash_v3
// then reads the GPU's compute capability, once per device).
bool sdpa_cuda_flash_v1_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why);
bool sdpa_cuda_flash_v2_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why);
bool sdpa_cuda_flash_v3_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why);

// The way from v2 to v3, for the benchmarks and the walk-through: flash_v3's kernel with its
// techniques added one at a time (each step keeps the ones before). flash_v3 is the last step.
//   wgmma     TMA loads, a producer warpgroup, wgmma for both products; one K/V stage, and every
//             product waited for as soon as it is issued
//   ring      + a ring of K/V stages: the producer runs that many tiles ahead
//   overlap   + within a warpgroup, the softmax of tile j runs while the tensor cores do tile
//             j-1's P V
//   pingpong  + between the two consumer warpgroups: one issues its products while the other
//             does its softmax (named barriers take turns)
enum class FlashV3Step { wgmma, ring, overlap, pingpong };
inline constexpr FlashV3Step kFlashV3Steps[] = {FlashV3Step::wgmma, FlashV3Step::ring, FlashV3Step::overlap,
                                                FlashV3Step::pingpong};
const char* flash_v3_step_name(FlashV3Step step);  // "wgmma", "ring", "overlap", "pingpong"
// Runs one step, a typed launcher like sdpa_cuda_flash_v3 (which is the last step): the checks and
// the reasons are flash_v3's.
void sdpa_cuda_flash_v3_step(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out,
                             FlashV3Step step);

}  // namespace ts
