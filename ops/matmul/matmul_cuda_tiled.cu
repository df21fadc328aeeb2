// ops/matmul/matmul_cuda_tiled.cu: rung 3 of mm, bmm and addmm: shared-memory tiles.
//
// What changed from rung 2 (matmul_cuda_naive.cu): a block of 32 x 32 threads
//        computes a 32 x 32 tile of out. It walks K in steps of 32: the block
//        loads a 32 x 32 tile of A and of B into shared memory (one element per
//        thread, converted to f32), waits, and every thread does 32
//        multiply-adds from shared memory. Each element loaded from global
//        memory is now used 32 times instead of once.
// Cost:  2*M*N*K FLOPs; global traffic falls 32x against rung 2, to
//        ~2*M*N*K/32 elements. Still CUDA cores in f32, no tensor cores: tens of
//        TFLOP/s at most, far below cuBLAS (SGEMM_CUDA's kernel 3 is this kernel).
// Try:   TS_VARIANT=mm/cuda/tiled ./build/dev/ts_tests -tc='cuda*'
#include "ops/cuda_common.cuh"
#include "ops/matmul/matmul_cuda.h"
#include "ops/matmul/matmul.h"

namespace ts {

constexpr int kMmTile = 32;

template <typename T>
__global__ void mm_tiled_32x32_kernel(GemmProblem p) {
  // As[r][k]: rows of A for this block's tile; Bs[k][c]: columns of B. A warp
  // (fixed ty, tx = 0..31) reads As[ty][k] (one address: a broadcast) and
  // Bs[k][tx] (32 consecutive floats: 32 banks), so no bank conflicts.
  __shared__ float As[kMmTile][kMmTile];
  __shared__ float Bs[kMmTile][kMmTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = int64_t(blockIdx.x) * kMmTile + tx;  // n
  // No early return: every thread must reach every barrier, so out-of-range
  // threads load zeros and skip only the final store. Row tiles and batches
  // past the grid's y/z limits (65535 blocks) loop; the bounds are the same
  // for the whole block, so the barriers stay uniform.
  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z)
  for (int64_t row0 = int64_t(blockIdx.y) * kMmTile; row0 < p.M; row0 += int64_t(gridDim.y) * kMmTile) {
    const int64_t row = row0 + ty;  // m
    const T* a = static_cast<const T*>(p.a) + z * p.a_batch;
    const T* b = static_cast<const T*>(p.b) + z * p.b_batch;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < p.K; k0 += kMmTile) {
      // Thread (ty, tx) loads A[row, k0 + tx] and B[k0 + ty, col]: consecutive tx
      // read consecutive addresses of a row-major operand (coalesced).
      As[ty][tx] = row < p.M && k0 + tx < p.K ? to_float(a[row * p.a_row + (k0 + tx) * p.a_col]) : 0.0f;
      Bs[ty][tx] = k0 + ty < p.K && col < p.N ? to_float(b[(k0 + ty) * p.b_row + col * p.b_col]) : 0.0f;
      __syncthreads();  // both tiles complete before anyone reads them
#pragma unroll
      for (int k = 0; k < kMmTile; ++k) acc += As[ty][k] * Bs[k][tx];
      __syncthreads();  // everyone done reading before the next step overwrites the tiles
    }
    if (row < p.M && col < p.N) {
      float v = p.alpha * acc;
      if (p.c != nullptr) v += p.beta * to_float(static_cast<const T*>(p.c)[row * p.c_row + col * p.c_col]);
      static_cast<T*>(p.out)[z * p.out_batch + row * p.out_row + col * p.out_col] = from_float<T>(v);
    }
  }
}

namespace {

void launch_mm_tiled(const GemmProblem& p, DType dtype) {
  if (p.M == 0 || p.N == 0 || p.batch == 0) return;
  const dim3 block(kMmTile, kMmTile);
  const dim3 grid(static_cast<unsigned>(ceil_div(p.N, kMmTile)),
                  static_cast<unsigned>(std::min<int64_t>(ceil_div(p.M, kMmTile), 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  visit_float_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(mm_tiled_32x32_kernel<T>, grid, block, p);
  });
}

}  // namespace

void mm_cuda_tiled(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_mm_tiled(gemm_problem(a, b, nullptr, 0, 1, out), out.dtype());
}
void bmm_cuda_tiled(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_mm_tiled(gemm_problem(a, b, nullptr, 0, 1, out), out.dtype());
}
void addmm_cuda_tiled(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  launch_mm_tiled(gemm_problem(a, b, &c, attrs.beta, attrs.alpha, out), out.dtype());
}

}  // namespace ts
