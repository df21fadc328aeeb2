// ops/matmul/matmul_cuda_mma.cu: rung 4 of mm, bmm and addmm: tensor cores through mma.sync, the
// Ampere-style GEMM (the kernel most CUDA tutorials end with). The instructions: ops/cuda_mma.cuh.
//
// What changed from rung 3 (matmul_cuda_tiled.cu, FMAs on 32 x 32 tiles):
//   - the math runs on the tensor cores: mma.sync.m16n8k16, bf16/f16 operands, f32 accumulators.
//     A block of 8 warps computes a 128 x 128 tile of out; each warp a 64 x 32 piece of it
//     (4 x 4 mma tiles, 64 accumulators per thread);
//   - operands reach the tensor cores through ldmatrix: one instruction loads four 8 x 8
//     matrices from shared memory straight into mma fragment order (.trans for a B whose rows
//     are K, i.e. N contiguous);
//   - tiles of 128 x 64 (A) and 64 x 128 (B) come in with cp.async (global -> shared without
//     registers, zero-filled past the edges) into a 3-stage ring: stage k+2 loads while stage k
//     is multiplied;
//   - shared-memory rows are swizzled in 16-byte chunks (chunk XOR row % 8), so the 8 rows one
//     ldmatrix reads fall in 8 different bank groups.
// Every address is still computed by every thread, every load still goes through a warp's
// instruction stream, and a warp waits for its own mma.sync results: rung 5 (wgmma + TMA) takes
// all three off the warps.
// Supports: bf16, f16; A with unit column stride; B with unit column stride ([K, N] rows) or unit
//   row stride (a t() view); rows and batches 16-byte aligned (strides multiples of 8 elements);
//   any M, N, K > 0 (partial chunks at the edges are zero-filled).
// Cost:  2*M*N*K FLOPs; A is read N/128 times and B M/128 times (from L2 mostly).
// Try:   TS_VARIANT=mm/cuda/mma ./build/dev/ts_tests -tc='cuda*'   ts_ladder --op mm
#include <cstdint>

#include "ops/cuda_common.cuh"
#include "ops/cuda_mma.cuh"
#include "ops/matmul/matmul.h"
#include "ops/matmul/matmul_cuda.h"

namespace ts {

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 64;  // block tile; kBK: one 128-byte row of 16-bit values
constexpr int kStages = 3;
constexpr int kWarps = 8;                       // 2 along M x 4 along N
[[maybe_unused]] constexpr int kWarpM = 64, kWarpN = 32;        // each warp's piece: 4 x 4 mma tiles of 16 x 8
constexpr int kThreadsMma = 32 * kWarps;
constexpr int kTileElems = kBM * kBK;           // A and B tiles hold 8192 elements each
constexpr size_t kSmemBytesMma = size_t{kStages} * 2 * kTileElems * 2;  // 96 KiB

// Element offset of 16-byte chunk `chunk` of row `row` in a tile whose rows hold kChunks chunks;
// the low 3 bits of the chunk index are XORed with row % 8.
template <int kChunks>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return (row * kChunks + (chunk ^ (row & 7))) * 8;
}

// Loads the rows [r0, r0 + kRows) x chunks of a row-major matrix (row stride `stride`, unit column
// stride) into a swizzled tile; elements at row >= rows or col >= cols become zeros.
template <typename T, int kRows, int kChunks>
__device__ __forceinline__ void load_tile(T* tile, const T* src, int64_t stride, int64_t r0, int64_t c0, int64_t rows,
                                          int64_t cols) {
  static_assert(kRows * kChunks % kThreadsMma == 0, "every thread copies the same number of chunks");
#pragma unroll
  for (int n = 0; n < kRows * kChunks / kThreadsMma; ++n) {
    const int i = n * kThreadsMma + threadIdx.x;  // consecutive threads: consecutive chunks of a row
    const int r = i / kChunks, chunk = i % kChunks;
    const int64_t row = r0 + r, col = c0 + chunk * 8;
    const int64_t left = row < rows ? cols - col : 0;  // elements of this chunk inside the matrix
    const int bytes = static_cast<int>(left <= 0 ? 0 : left >= 8 ? 16 : left * 2);
    const T* from = bytes > 0 ? src + row * stride + col : src;  // never read when bytes == 0
    cp_async_16_partial(smem_u32(tile + swizzled<kChunks>(r, chunk)), from, bytes);
  }
}

template <typename T, bool kBKMajor>
__global__ void __launch_bounds__(kThreadsMma) gemm_mma_kernel(GemmProblem p) {
#if TS_CUDA_HAS_SM80
  extern __shared__ __align__(128) unsigned char smem_mma[];
  T* ring_a = reinterpret_cast<T*>(smem_mma);  // [kStages][kBM][kBK]
  T* ring_b = ring_a + kStages * kTileElems;   // [kStages]: [kBN][kBK] (K-major) or [kBK][kBN]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / 4, warp_n = warp % 4;
  const int k_tiles = static_cast<int>(ceil_div(p.K, kBK));
  const int64_t n0 = int64_t(blockIdx.x) * kBN;

  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z)
  for (int64_t m0 = int64_t(blockIdx.y) * kBM; m0 < p.M; m0 += int64_t(gridDim.y) * kBM) {
    const T* a = static_cast<const T*>(p.a) + z * p.a_batch;
    const T* b = static_cast<const T*>(p.b) + z * p.b_batch;
    auto load_stage = [&](int stage, int kt) {
      const int64_t k0 = int64_t(kt) * kBK;
      load_tile<T, kBM, kBK / 8>(ring_a + stage * kTileElems, a, p.a_row, m0, k0, p.M, p.K);
      if constexpr (kBKMajor) {  // B^T rows: n, K contiguous
        load_tile<T, kBN, kBK / 8>(ring_b + stage * kTileElems, b, p.b_col, n0, k0, p.N, p.K);
      } else {  // B rows: k, N contiguous
        load_tile<T, kBK, kBN / 8>(ring_b + stage * kTileElems, b, p.b_row, k0, n0, p.K, p.N);
      }
    };

    float acc[4][4][4] = {};  // [m16 tile][n8 tile][fragment]
    // Prologue: the first kStages - 1 k-tiles in flight. Every thread commits one group per
    // k-tile, loaded or not, so "wait until kStages - 2 groups are pending" always means
    // "k-tile kt has landed".
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) load_stage(s, s);
      cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // k-tile kt visible to all; everyone is done with the stage refilled next
      if (kt + kStages - 1 < k_tiles) load_stage((kt + kStages - 1) % kStages, kt + kStages - 1);
      cp_async_commit();

      const T* ta = ring_a + (kt % kStages) * kTileElems;
      const T* tb = ring_b + (kt % kStages) * kTileElems;
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        uint32_t fa[4][4], fb[4][2];
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) {  // lanes 0-15: rows 0-15 at k chunk 2kk; 16-31: chunk 2kk+1
          const int row = warp_m * kWarpM + mi * 16 + lane % 16;
          ldmatrix_x4(fa[mi], smem_u32(ta + swizzled<kBK / 8>(row, 2 * kk + lane / 16)));
        }
#pragma unroll
        for (int nj = 0; nj < 4; nj += 2) {  // one x4: n8 tiles nj and nj+1, k 0-7 and 8-15 each
          uint32_t r[4];
          if constexpr (kBKMajor) {  // rows n: matrices (n tile, k half) in order (nj,0) (nj,1) (nj+1,0) (nj+1,1)
            const int row = warp_n * kWarpN + nj * 8 + lane % 8 + 8 * (lane / 16);
            ldmatrix_x4(r, smem_u32(tb + swizzled<kBK / 8>(row, 2 * kk + (lane / 8) % 2)));
          } else {  // rows k, transposed on the way: the same four matrices
            const int row = kk * 16 + lane % 8 + 8 * ((lane / 8) % 2);
            ldmatrix_x4_trans(r, smem_u32(tb + swizzled<kBN / 8>(row, (warp_n * kWarpN + nj * 8) / 8 + lane / 16)));
          }
          fb[nj][0] = r[0];
          fb[nj][1] = r[1];
          fb[nj + 1][0] = r[2];
          fb[nj + 1][1] = r[3];
        }
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
          for (int nj = 0; nj < 4; ++nj) mma_16816<T>(acc[mi][nj], fa[mi], fb[nj][0], fb[nj][1]);
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // the next row tile's prologue overwrites stages others may still read

    // Epilogue: fragment (mi, nj) holds rows g and g + 8, columns 2t and 2t + 1 of its 16 x 8 tile.
    const int g = lane / 4, t = lane % 4;
    T* out = static_cast<T*>(p.out) + z * p.out_batch;
    const T* c = static_cast<const T*>(p.c);
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int nj = 0; nj < 4; ++nj)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t row = m0 + warp_m * kWarpM + mi * 16 + g + 8 * h;
          if (row >= p.M) continue;
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int64_t col = n0 + warp_n * kWarpN + nj * 8 + 2 * t + e;
            if (col >= p.N) continue;
            float v = p.alpha * acc[mi][nj][2 * h + e];
            if (c != nullptr) v += p.beta * to_float(c[row * p.c_row + col * p.c_col]);
            out[row * p.out_row + col * p.out_col] = from_float<T>(v);
          }
        }
  }
#else
  __trap();  // built for a GPU older than 8.0: the rung row's sm80 keeps every call away
#endif
}

template <typename T, bool kBKMajor>
void launch_mma_typed(const GemmProblem& p, int device) {
  auto kernel = gemm_mma_kernel<T, kBKMajor>;
  static std::atomic<uint64_t> allowed;  // devices this instance may use its shared memory on
  allow_smem(kernel, kSmemBytesMma, device, allowed);
  const dim3 grid(static_cast<unsigned>(ceil_div(p.N, kBN)),
                  static_cast<unsigned>(std::min<int64_t>(ceil_div(p.M, kBM), 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  launch_with_smem(kernel, grid, dim3(kThreadsMma), kSmemBytesMma, p);
}

void launch_mma(const GemmProblem& p, const Tensor& out) {
  std::string why;  // dispatch asked already; a direct call must not reach a GPU without the code
  TS_CHECK(gpu_meets(sm80, out.device(), &why), "mma.sync GEMM: {}", why);
  const bool k_major = p.b_row == 1;
  const int device = out.device().index;
  if (out.dtype() == DType::bf16) {
    k_major ? launch_mma_typed<__nv_bfloat16, true>(p, device) : launch_mma_typed<__nv_bfloat16, false>(p, device);
  } else {
    k_major ? launch_mma_typed<__half, true>(p, device) : launch_mma_typed<__half, false>(p, device);
  }
}

}  // namespace

bool gemm_cuda_mma_supports(const OpCall& call, std::string* why) {
  return tensor_core_gemm_supports(call, "mma.sync", why);
}

void mm_cuda_mma(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_mma(gemm_problem(a, b, nullptr, 0, 1, out), out);
}
void bmm_cuda_mma(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_mma(gemm_problem(a, b, nullptr, 0, 1, out), out);
}
void addmm_cuda_mma(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  launch_mma(gemm_problem(a, b, &c, attrs.beta, attrs.alpha, out), out);
}

}  // namespace ts
