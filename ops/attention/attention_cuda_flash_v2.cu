// ops/attention/attention_cuda_flash_v2.cu: rung 2 of scaled_dot_product_attention on CUDA: flash
// attention on tensor cores (the FlashAttention-2 forward pass, on sm_80+ instructions).
//
// What changed from rung 1 (attention_cuda_flash_v1.cu): the same online softmax, but
//   - both products run on tensor cores: mma.sync.m16n8k16 with bf16/f16 operands and f32
//     accumulators, S = Q K^T and O += P V. A warp owns 16 query rows; warps split the block's
//     Br = 128 queries, so every warp's O rows are its own (no cross-warp reduction);
//   - Q is loaded once into registers (as mma A fragments) and stays there for the whole block;
//   - P never leaves registers either: S's f32 accumulator fragment is, element for element,
//     the A fragment of the P V product once rounded to 16 bits;
//   - K and V tiles (Bc = 64 keys) come in with cp.async (global -> shared without registers)
//     into two buffers: tile t+1 loads while tile t is computed. ldmatrix reads them in mma
//     fragment order (.trans for V), from rows XOR-swizzled in 16-byte chunks so that the 8 rows
//     of one 8x8 matrix fall in 8 different bank groups;
//   - softmax in exp2 with the scale folded in: P = exp2(S * scale*log2(e) - m * scale*log2(e)),
//     one FFMA and one ex2.approx per score;
//   - causal: key tiles past the block's last query are never loaded, a warp skips tiles past its
//     own last row, and only the tiles that cross the diagonal (or the end of L) are masked;
//   - Br = 128 queries share each K/V tile (v1: 16): 8x less K/V traffic.
// Supports: bf16, f16; head dims 64, 96 and 128 (a kernel each); any S, L (tails masked), any
//   B, H strides; the last dim of q, k, v must have stride 1 and rows start 16-byte aligned
//   (cp.async moves 16 bytes). Hopper's wgmma/TMA would be a rung beside this one.
// Cost:  4*B*H*S*L*D FLOPs (causal about half, the exact count being 4*B*H*D * sum_i min(i+1, L));
//        bytes: q and out once, K and V once per block of Br queries:
//        (2*S*D + 2*L*D*ceil(S/Br)) * B*H * sizeof(T) (causal about half of the K/V part).
// Try:   ./build/release/ts_bench --filter /flash_v2   (tests: ts_tests -tc='cuda: flash*')
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include <math_constants.h>

#include "ops/attention/attention_flash_problem.h"
#include "ops/cuda_common.cuh"
#include "ops/cuda_mma.cuh"

namespace ts {

namespace {

constexpr int kWarpsV2 = 8;
constexpr int kBrV2 = 16 * kWarpsV2;  // queries per block: 16 per warp (one mma M tile)
constexpr int kBcV2 = 64;             // keys per K/V tile
constexpr int kThreadsV2 = 32 * kWarpsV2;

// A row's room in shared memory: D rounded up to whole groups of 8 chunks of 16 bytes, the
// swizzle's width (below): 64 and 128 as they are, 96 in 128's room (its last 4 chunks unused).
__host__ __device__ constexpr int smem_row(int D) { return (D + 63) / 64 * 64; }

// Shared memory: Q [Br][row], then K [2][Bc][row] and V [2][Bc][row] (two buffers each).
constexpr size_t flash_v2_smem_bytes(int D) { return static_cast<size_t>(kBrV2 + 4 * kBcV2) * smem_row(D) * 2; }

// ---- the instructions: ops/cuda_mma.cuh (cp.async, ldmatrix, mma.sync), and one more -------

// 2^x on the special function unit (relative error ~2^-22); ex2(-inf) = +0.
[[maybe_unused]] __device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Element offset of 16-byte chunk `chunk` of row `row` in a [rows][kRow] tile (kRow = smem_row(D)).
// The chunk index is XORed with row % 8: ldmatrix reads one chunk from each of 8 consecutive rows,
// and rows of 128 or 256 bytes would otherwise all start in the same bank group (an 8-way
// conflict). The XOR stays within the row because kRow is a whole number of 8-chunk groups.
template <int kRow>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  static_assert(kRow % 64 == 0, "whole groups of 8 chunks");
  return row * kRow + ((chunk ^ (row & 7)) * 8);
}

// Copies rows [row0, row0 + kRows) of a [rows, D] matrix (row stride `stride` elements, unit
// column stride) into a swizzled shared tile; rows at or past `end` become zeros. Only the D
// columns are written (D = 96: chunks 0..11 of the row's 16).
template <typename T, int D, int kRows>
__device__ __forceinline__ void load_tile_async(T* tile, const T* src, int64_t stride, int64_t row0, int64_t end) {
  constexpr int kChunks = D / 8;  // 16 bytes = 8 elements
  static_assert(kRows * kChunks % kThreadsV2 == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int n = 0; n < kRows * kChunks / kThreadsV2; ++n) {
    const int c = n * kThreadsV2 + threadIdx.x;  // consecutive threads: consecutive chunks of a row
    const int r = c / kChunks, chunk = c % kChunks;
    const bool valid = row0 + r < end;
    const T* from = src + (valid ? (row0 + r) * stride : 0) + chunk * 8;  // row 0 when invalid: never read
    cp_async_16(smem_u32(tile + swizzle<smem_row(D)>(r, chunk)), from, valid);
  }
}

}  // namespace

// One block: Br = 128 queries of one (batch, head); warp w owns rows q0 + 16w .. q0 + 16w + 15.
// Blocks are numbered query block major with query blocks from the last one down (causal: the
// longest blocks start first), as in v1.
template <typename T, int D>
__device__ __forceinline__ void flash_fwd_v2_block(const FlashProblem& p) {
#if TS_CUDA_HAS_SM80
  constexpr int Br = kBrV2, Bc = kBcV2;
  constexpr int kSteps = D / 16;      // k-steps of S = Q K^T (16 dims each)
  constexpr int kKeyTiles = Bc / 8;   // n-tiles of S (8 keys each)
  constexpr int kDimTiles = D / 8;    // n-tiles of O (8 dims each)
  constexpr int kRow = smem_row(D);   // elements per row of the shared tiles
  const float kNegInf = -CUDART_INF_F;

  extern __shared__ __align__(16) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem);  // [Br][kRow]
  T* Ks = Qs + Br * kRow;              // [2][Bc][kRow]
  T* Vs = Ks + 2 * Bc * kRow;          // [2][Bc][kRow]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates (see mma_16816)
  const int64_t BH = p.B * p.H;
  const int64_t n_q_blocks = ceil_div(p.S, Br);
  const int64_t q0 = (n_q_blocks - 1 - blockIdx.x / BH) * Br;
  const int64_t bh = blockIdx.x % BH, b = bh / p.H, h = bh % p.H;
  const T* q = static_cast<const T*>(p.q) + b * p.q_b + h * p.q_h;
  const T* k = static_cast<const T*>(p.k) + b * p.k_b + h * p.k_h;
  const T* v = static_cast<const T*>(p.v) + b * p.v_b + h * p.v_h;
  T* out = static_cast<T*>(p.out) + bh * p.S * D;  // contiguous [B, H, S, D]

  // With causal, keys past the block's last query are masked for every row: never loaded.
  const int64_t kv_end = p.causal && q0 + Br < p.L ? q0 + Br : p.L;
  const int n_tiles = static_cast<int>(ceil_div(kv_end, Bc));

  // Prologue: Q and the first K/V tile in flight together.
  load_tile_async<T, D, Br>(Qs, q, p.q_s, q0, p.S);
  if (n_tiles > 0) {
    load_tile_async<T, D, Bc>(Ks, k, p.k_s, 0, p.L);
    load_tile_async<T, D, Bc>(Vs, v, p.v_s, 0, p.L);
  }
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();  // Q and tile 0 visible to every warp

  // Q -> registers as A fragments, once: q_frag[s] covers dims 16s..16s+15 of the warp's 16 rows.
  // Matrix m of the x4 load is (rows +8*(m%2), dims +8*(m/2)): lane l addresses row l%16, chunk 2s + l/16.
  const int warp_row = warp * 16;
  uint32_t q_frag[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
    ldmatrix_x4(q_frag[s], smem_u32(Qs + swizzle<kRow>(warp_row + lane % 16, 2 * s + lane / 16)));
  // A negative scale: negate Q (flip the sign bits) so that scale > 0 below and the running max
  // of raw scores is also the max of the scaled ones.
  float scale_log2 = p.scale * 1.4426950408889634f;  // scale * log2(e): exp(x * scale) = exp2(x * scale_log2)
  if (scale_log2 < 0) {
    scale_log2 = -scale_log2;
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
#pragma unroll
      for (int r = 0; r < 4; ++r) q_frag[s][r] ^= 0x80008000u;
  }

  // This thread's two rows of the warp's 16: g and g + 8 (index r = 0, 1 below).
  const int64_t row_first = q0 + warp_row;  // the warp's first and last query
  const int64_t row_last = row_first + 15;
  float m[2] = {kNegInf, kNegInf};  // running max of the raw scores, per row
  float l[2] = {0, 0};              // running sum of P (this thread's columns only; summed over the quad at the end)
  float acc[kDimTiles][4] = {};     // O, unnormalized, as mma accumulator fragments

  for (int tile = 0; tile < n_tiles; ++tile) {
    const int buf = tile & 1;
    if (tile > 0) {
      cp_async_wait_all();
      __syncthreads();  // tile `tile` is visible to all, and every warp is done with tile - 1 (buffer buf ^ 1)
    }
    if (tile + 1 < n_tiles) {  // the next tile loads into the other buffer while this one is computed
      load_tile_async<T, D, Bc>(Ks + (buf ^ 1) * Bc * kRow, k, p.k_s, int64_t(tile + 1) * Bc, p.L);
      load_tile_async<T, D, Bc>(Vs + (buf ^ 1) * Bc * kRow, v, p.v_s, int64_t(tile + 1) * Bc, p.L);
      cp_async_commit();
    }
    const int64_t j0 = int64_t(tile) * Bc;
    if (p.causal && j0 > row_last) continue;  // every key of this tile is in all of this warp's rows' future
    const T* Kt = Ks + buf * Bc * kRow;
    const T* Vt = Vs + buf * Bc * kRow;

    // S = Q K^T: 16 rows x Bc keys. B[k = dim][n = key] = K[key][dim]: K's rows as stored are the
    // "col" operand, so ldmatrix without .trans. Matrix m: keys +8*(m/2), dims +8*(m%2);
    // lane l addresses key (l%8) + 8*(l/16), chunk 2s + (l/8)%2.
    float S[kKeyTiles][4] = {};
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
#pragma unroll
      for (int n = 0; n < kKeyTiles; n += 2) {
        uint32_t kf[4];
        ldmatrix_x4(kf, smem_u32(Kt + swizzle<kRow>(n * 8 + lane % 8 + (lane / 16) * 8, 2 * s + (lane / 8) % 2)));
        mma_16816<T>(S[n], q_frag[s], kf[0], kf[1]);
        mma_16816<T>(S[n + 1], q_frag[s], kf[2], kf[3]);
      }
    }

    // Masks: keys at or past L (a partial last tile), and with causal the keys j > i. Only tiles
    // that cross the diagonal or the end of L pay for it.
    const bool past_l = j0 + Bc > p.L;
    const bool crosses_diagonal = p.causal && j0 + Bc - 1 > row_first;
    if (past_l || crosses_diagonal) {
      // Row r sees the tile's columns c < visible[r] (c = key - j0): 32-bit compares per score.
      int visible[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int64_t end = p.L - j0;
        const int64_t diagonal_end = row_first + g + 8 * r - j0 + 1;  // causal: keys j <= i
        if (p.causal && diagonal_end < end) end = diagonal_end;
        visible[r] = end < 0 ? 0 : end > Bc ? Bc : static_cast<int>(end);
      }
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (n * 8 + 2 * t + (e & 1) >= visible[e >> 1]) S[n][e] = kNegInf;
    }

    // Online softmax, per row r. The row max needs the quad's 4 lanes (they share the row):
    // two butterfly shuffles. fmaxf ignores NaN: a NaN score reaches the output through P and l.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float m_new = m[r];
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n) m_new = fmaxf(m_new, fmaxf(S[n][2 * r], S[n][2 * r + 1]));
      m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 1));
      m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 2));
      // No visible key yet (m_new = -inf): subtract 0, so that exp2(-inf) = 0 rather than exp2(NaN).
      const float m_base = m_new == kNegInf ? 0.0f : m_new * scale_log2;
      const float rescale = exp2_approx(m[r] * scale_log2 - m_base);  // 0 while m[r] = -inf
      m[r] = m_new;
      l[r] *= rescale;
#pragma unroll
      for (int d = 0; d < kDimTiles; ++d) {
        acc[d][2 * r] *= rescale;
        acc[d][2 * r + 1] *= rescale;
      }
#pragma unroll
      for (int n = 0; n < kKeyTiles; ++n)
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          S[n][e] = exp2_approx(fmaf(S[n][e], scale_log2, -m_base));  // P, in place of S
          l[r] += S[n][e];
        }
    }

    // O += P V, 16 keys per k-step. P's A fragment for keys 16s..16s+15 is S tiles 2s and 2s+1,
    // rounded to T (see mma_16816: d[0..1] of tile 2s is a[0], d[2..3] is a[1], tile 2s+1 gives
    // a[2], a[3]). B[k = key][n = dim] = V[key][dim]: a column of V per lane pair, so ldmatrix
    // .trans. Matrix m: keys +8*(m%2), dims +8*(m/2); lane l addresses key (l%8) + 8*((l/8)%2),
    // chunk 2d + l/16.
#pragma unroll
    for (int s = 0; s < Bc / 16; ++s) {
      const uint32_t pa[4] = {pack2<T>(S[2 * s][0], S[2 * s][1]), pack2<T>(S[2 * s][2], S[2 * s][3]),
                              pack2<T>(S[2 * s + 1][0], S[2 * s + 1][1]), pack2<T>(S[2 * s + 1][2], S[2 * s + 1][3])};
#pragma unroll
      for (int d = 0; d < kDimTiles; d += 2) {
        uint32_t vf[4];
        ldmatrix_x4_trans(vf, smem_u32(Vt + swizzle<kRow>(16 * s + lane % 8 + ((lane / 8) % 2) * 8, d + lane / 16)));
        mma_16816<T>(acc[d], pa, vf[0], vf[1]);
        mma_16816<T>(acc[d + 1], pa, vf[2], vf[3]);
      }
    }
  }

  // out = O / l. Each thread summed only its own columns of P: add the quad's four partial sums.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l_row = l[r];
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 1);
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 2);
    const float inv_l = l_row == 0.0f ? 0.0f : 1.0f / l_row;  // no visible key: 0, as the safe softmax gives
    const int64_t i = row_first + g + 8 * r;
    if (i >= p.S) continue;
    T* out_row = out + i * D + 2 * t;
#pragma unroll
    for (int d = 0; d < kDimTiles; ++d)  // 4 bytes per lane; a quad writes 16 contiguous bytes
      *reinterpret_cast<uint32_t*>(out_row + d * 8) = pack2<T>(acc[d][2 * r] * inv_l, acc[d][2 * r + 1] * inv_l);
  }
#else
  __trap();  // built for a GPU older than 8.0: the rung row's sm80 keeps every call away
#endif
}

// One kernel per dtype and head dim, named for the trace. 8 warps of 16 queries; d64 fits two
// blocks per SM (registers capped at 128 per thread), d96 and d128 one (d128's O alone is 64
// registers; d96's shared tiles are d128's size).
__global__ void __launch_bounds__(kThreadsV2, 2) ts_flash_attn_fwd_v2_bf16_d64(FlashProblem p) {
  flash_fwd_v2_block<__nv_bfloat16, 64>(p);
}
__global__ void __launch_bounds__(kThreadsV2, 2) ts_flash_attn_fwd_v2_f16_d64(FlashProblem p) {
  flash_fwd_v2_block<__half, 64>(p);
}
__global__ void __launch_bounds__(kThreadsV2, 1) ts_flash_attn_fwd_v2_bf16_d96(FlashProblem p) {
  flash_fwd_v2_block<__nv_bfloat16, 96>(p);
}
__global__ void __launch_bounds__(kThreadsV2, 1) ts_flash_attn_fwd_v2_f16_d96(FlashProblem p) {
  flash_fwd_v2_block<__half, 96>(p);
}
__global__ void __launch_bounds__(kThreadsV2, 1) ts_flash_attn_fwd_v2_bf16_d128(FlashProblem p) {
  flash_fwd_v2_block<__nv_bfloat16, 128>(p);
}
__global__ void __launch_bounds__(kThreadsV2, 1) ts_flash_attn_fwd_v2_f16_d128(FlashProblem p) {
  flash_fwd_v2_block<__half, 128>(p);
}

bool sdpa_cuda_flash_v2_supports(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                 std::string* why) {
  if (!flash_common_supports("flash_v2", q, k, v, attrs, why)) return false;
  if (!flash_tensor_core_supports("flash_v2", "cp.async", {64, 96, 128}, q, k, v, why)) return false;
  return flash_device_supports("flash_v2", q, k, v, why);
}


namespace {

// The launch; the caller has asked sdpa_cuda_flash_v2_supports (dispatch, or the launcher below).
void launch_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  flash_check_out("flash_v2", q, out);
  TS_CHECK(aligned16(out.data_ptr()), "sdpa flash_v2: out's data must be 16-byte aligned");
  const FlashProblem p = flash_problem(q, k, v, attrs, out);
  TS_CHECK(p.D == 64 || p.D == 96 || p.D == 128, "sdpa flash_v2: head dim {} has no kernel (supports() refuses it)",
           p.D);
  const int64_t blocks = ceil_div(p.S, kBrV2) * p.B * p.H;
  if (blocks == 0) return;
  TS_CHECK(blocks <= std::numeric_limits<int>::max(), "sdpa flash_v2: {} blocks of {} queries exceed a grid",
           blocks, kBrV2);
  const bool bf16 = q.dtype() == DType::bf16;
  void (*kernel)(FlashProblem) = nullptr;
  static std::atomic<uint64_t> allowed[6];  // per kernel: devices it may use its shared memory on
  int which = 0;
  if (p.D == 64) {
    kernel = bf16 ? ts_flash_attn_fwd_v2_bf16_d64 : ts_flash_attn_fwd_v2_f16_d64;
    which = bf16 ? 0 : 1;
  } else if (p.D == 96) {
    kernel = bf16 ? ts_flash_attn_fwd_v2_bf16_d96 : ts_flash_attn_fwd_v2_f16_d96;
    which = bf16 ? 2 : 3;
  } else {
    kernel = bf16 ? ts_flash_attn_fwd_v2_bf16_d128 : ts_flash_attn_fwd_v2_f16_d128;
    which = bf16 ? 4 : 5;
  }
  const size_t smem = flash_v2_smem_bytes(static_cast<int>(p.D));
  allow_smem(kernel, smem, q.device().index, allowed[which]);
  launch_with_smem(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreadsV2), smem, p);
}

}  // namespace

void sdpa_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  out = make_contiguous_tensor(q.shape(), {q.dtype(), q.device()});
  launch_flash_v2(q, k, v, attrs, out);
}

void sdpa_cuda_flash_v2(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  std::string why;
  if (!sdpa_cuda_flash_v2_supports(q, k, v, attrs, &why)) fail("{}", why);
  TS_CHECK(gpu_meets(sm80, q.device(), &why), "sdpa flash_v2: {}", why);  // dispatch asks it of the rung row
  launch_flash_v2(q, k, v, attrs, out);
}

}  // namespace ts
