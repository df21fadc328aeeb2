// ops/attention/attention_cuda_flash_v1.cu: rung 1 of scaled_dot_product_attention on CUDA: flash attention,
// written to be read beside the FlashAttention algorithm.
//
// What changed from rung 0 (the math composite, attention.cpp): one kernel instead of matmul, mul,
//        masked_fill (and the causal mask's ones/triu), _safe_softmax, matmul. The [B, H, S, L] scores
//        never go to memory. A block owns Br = 16 queries of one (batch, head) and streams K and V
//        through shared memory Bc = 32 keys at a time. For each query row i it keeps, in f32, the
//        running max m_i, the running sum l_i and the unnormalized output O_i (online softmax):
//            S_ij  = scale * q_i . k_j                  (-inf where masked)
//            m_new = max(m_i, max_j S_ij)
//            P_ij  = exp(S_ij - m_new)
//            l_i   = exp(m_i - m_new) * l_i + sum_j P_ij
//            O_i   = exp(m_i - m_new) * O_i + sum_j P_ij v_j
//        and finally out_i = O_i / l_i. exp(m_i - m_new) rescales what was summed under the old max.
// How:   one warp per query row i. Scores: lane j owns key j0 + j of the tile (Bc = 32, one per lane);
//        the tile's max and sum are warp reductions. Output: lane owns dims lane, lane+32, lane+64,
//        lane+96 of O_i, and each P_ij reaches it by a shuffle. Scalar f32 FMAs on CUDA cores, no
//        tensor cores. Causal: key tiles past the block's last query are skipped.
// Supports: bf16, f16; head dims 1..128; any S and L; any strides (each element is read on its own).
// Cost:  4*B*H*S*L*D FLOPs (about half of it with causal); bytes: q and out once, K and V once per
//        block of Br queries: (2*S*D + 2*L*D*ceil(S/Br)) * B*H * sizeof(T). At Br = 16 the K/V reloads
//        dominate; flash_v2 cuts them 8x (Br = 128) and moves the FLOPs to tensor cores.
// Try:   ./build/release/ts_bench --filter /flash_v1   (tests: ts_tests -tc='cuda: flash*')
#include <cmath>
#include <limits>

#include <math_constants.h>

#include "ops/attention/attention_flash_problem.h"
#include "ops/cuda_common.cuh"

namespace ts {

namespace {

constexpr int kBr = 16;                  // queries per block: one warp each
constexpr int kBc = 32;                  // keys per tile: one per lane
constexpr int kMaxD = 128;               // head dims up to this
constexpr int kDimsPerLane = kMaxD / 32;  // O_i's dims owned by one lane
constexpr int kThreadsV1 = kBr * 32;

}  // namespace

// Blocks are numbered query block major: blockIdx.x = qb * (B*H) + bh, with query blocks taken from
// the last one down. With causal, the last query block sees the most keys: starting those first keeps
// the GPU from ending on a few long blocks.
template <typename T>
__device__ __forceinline__ void flash_fwd_v1_block(const FlashProblem& p) {
  __shared__ float Qs[kBr][kMaxD];      // the block's queries, in f32
  __shared__ float Ks[kBc][kMaxD + 1];  // +1 pad: lane j reads Ks[j][d], bank (j + d) % 32: no conflicts
  __shared__ float Vs[kBc][kMaxD];      // lanes read Vs[j][lane + 32c]: consecutive words

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t BH = p.B * p.H;
  const int64_t n_q_blocks = ceil_div(p.S, kBr);
  const int64_t q0 = (n_q_blocks - 1 - blockIdx.x / BH) * kBr;
  const int64_t bh = blockIdx.x % BH, b = bh / p.H, h = bh % p.H;
  const int D = static_cast<int>(p.D);
  const T* q = static_cast<const T*>(p.q) + b * p.q_b + h * p.q_h;
  const T* k = static_cast<const T*>(p.k) + b * p.k_b + h * p.k_h;
  const T* v = static_cast<const T*>(p.v) + b * p.v_b + h * p.v_h;
  T* out = static_cast<T*>(p.out) + bh * p.S * D;  // contiguous [B, H, S, D]

  // Rows past S load as 0: their warps still take part in every tile load and barrier, and store nothing.
  for (int e = threadIdx.x; e < kBr * D; e += blockDim.x) {
    const int r = e / D, d = e % D;
    Qs[r][d] = q0 + r < p.S ? to_float(q[(q0 + r) * p.q_s + d * p.q_d]) : 0.0f;
  }

  const int64_t i = q0 + warp;  // this warp's query row
  const float kNegInf = -CUDART_INF_F;
  float m_i = kNegInf, l_i = 0;
  float O_i[kDimsPerLane] = {};

  // With causal, keys past the block's last query row are masked for every row of the block.
  const int64_t kv_end = p.causal && q0 + kBr < p.L ? q0 + kBr : p.L;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kBc) {
    __syncthreads();  // every warp is done with the previous tile (and Qs is complete, the first time)
    for (int e = threadIdx.x; e < kBc * D; e += blockDim.x) {
      const int jj = e / D, d = e % D;
      const bool in = j0 + jj < p.L;  // keys past L load as 0: P is 0 there, and 0 * garbage could be NaN
      Ks[jj][d] = in ? to_float(k[(j0 + jj) * p.k_s + d * p.k_d]) : 0.0f;
      Vs[jj][d] = in ? to_float(v[(j0 + jj) * p.v_s + d * p.v_d]) : 0.0f;
    }
    __syncthreads();  // the tile is complete before anyone reads it

    // S_ij for key j = j0 + lane: a dot product over D (Qs[warp][d] is one address: a broadcast).
    const int64_t j = j0 + lane;
    float S_ij = kNegInf;
    if (j < p.L && !(p.causal && j > i)) {
      float dot = 0;
      for (int d = 0; d < D; ++d) dot += Qs[warp][d] * Ks[lane][d];
      S_ij = dot * p.scale;
    }

    // Online softmax. fmaxf ignores NaN, so a NaN score leaves the max alone and reaches
    // the output through P_ij (NaN) and l_i, as in the reference.
    const float m_new = fmaxf(m_i, warp_max(S_ij));
    // No visible key yet (m_new = -inf): subtract 0 so that exp(-inf - 0) = 0, not exp(NaN).
    const float m_base = m_new == kNegInf ? 0.0f : m_new;
    const float P_ij = expf(S_ij - m_base);
    const float rescale = expf(m_i - m_base);  // exp(m_i - m_new): 0 the first time (m_i = -inf)
    l_i = rescale * l_i + warp_sum(P_ij);
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) O_i[c] *= rescale;
    // O_i += sum_j P_ij v_j: lane jj holds P_i(j0+jj); the shuffle hands it to every lane.
    for (int jj = 0; jj < kBc; ++jj) {
      const float P = __shfl_sync(0xffffffffu, P_ij, jj);
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c)
        if (lane + 32 * c < D) O_i[c] += P * Vs[jj][lane + 32 * c];
    }
    m_i = m_new;
  }

  if (i < p.S) {
    const float inv_l = l_i == 0.0f ? 0.0f : 1.0f / l_i;  // no visible key: 0, as the safe softmax gives
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c)
      if (lane + 32 * c < D) out[i * D + lane + 32 * c] = from_float<T>(O_i[c] * inv_l);
  }
}

// One kernel per dtype, named for the trace.
__global__ void __launch_bounds__(kThreadsV1) ts_flash_attn_fwd_v1_bf16(FlashProblem p) {
  flash_fwd_v1_block<__nv_bfloat16>(p);
}
__global__ void __launch_bounds__(kThreadsV1) ts_flash_attn_fwd_v1_f16(FlashProblem p) {
  flash_fwd_v1_block<__half>(p);
}

bool sdpa_cuda_flash_v1_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why) {
  if (!flash_common_supports("flash_v1", q, k, v, attrs, why)) return false;
  const int64_t D = q.shape()[3];
  if (D < 1 || D > kMaxD)
    return flash_refuse(why, fmt::format("sdpa flash_v1: head dim {} is not supported (1 to {})", D, kMaxD));
  return flash_device_supports("flash_v1", q, k, v, why);
}

namespace {

// The launch; the caller has asked sdpa_cuda_flash_v1_supports (dispatch, or the launcher below).
void launch_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  flash_check_out("flash_v1", q, out);
  const FlashProblem p = flash_problem(q, k, v, attrs, out);
  const int64_t blocks = ceil_div(p.S, kBr) * p.B * p.H;
  if (blocks == 0) return;
  TS_CHECK(blocks <= std::numeric_limits<int>::max(), "sdpa flash_v1: {} blocks of {} queries exceed a grid",
           blocks, kBr);
  launch(q.dtype() == DType::bf16 ? ts_flash_attn_fwd_v1_bf16 : ts_flash_attn_fwd_v1_f16,
         dim3(static_cast<unsigned>(blocks)), dim3(kThreadsV1), p);
}

}  // namespace

void sdpa_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  out = make_contiguous_tensor(q.shape(), {q.dtype(), q.device()});
  launch_flash_v1(q, k, v, attrs, out);
}

void sdpa_cuda_flash_v1(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  std::string why;
  if (!sdpa_cuda_flash_v1_supports(q, k, v, attrs, &why)) fail("{}", why);
  launch_flash_v1(q, k, v, attrs, out);
}

}  // namespace ts
