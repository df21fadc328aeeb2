// ops/softmax/softmax_cuda_naive.cu: rung 1 of softmax and _safe_softmax on CUDA.
//
// What changed from rung 0 (softmax_cpu_ref.cpp): rows run in parallel, and
//        each row's max and sum are reductions across threads:
//          rows of up to 1024 elements: one warp per row (softmax_warp_per_row_kernel);
//            the 32 lanes stride over the row and combine with shuffles, no
//            shared memory and no barrier;
//          longer rows: one block per row (softmax_block_per_row_kernel); each
//            warp reduces its share, then the warps' partials meet in shared memory.
//        The same three steps as the oracle: m = max(x), s = sum(exp(x - m)),
//        y = exp(x - m) / s, all in f32. The safe variant writes 0 for a row that
//        is entirely -inf (m = -inf) instead of NaN.
// Cost:  three reads of each row (max, sum, write pass) and one write; rows that
//        fit in L1/L2 make the second and third reads cheap.
// Try:   TS_VARIANT=softmax/cuda/naive ./build/dev/ts_tests -tc='cuda*'
#include <math_constants.h>

#include "ops/cuda_common.cuh"
#include "ops/variants.h"

namespace ts {

constexpr int kSoftmaxWarpRowsPerBlock = 4;  // warp-per-row kernel: 4 warps (4 rows) per block of 128 threads
constexpr int kSoftmaxBlockThreads = 512;    // block-per-row kernel
constexpr int64_t kSoftmaxWarpMaxRow = 1024;  // longest row the warp kernel takes (32 elements per lane)

// Every thread gets the reduction over the block. scratch holds one partial per warp.
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_max(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();  // all partials written before any warp reads them
  v = lane < int(blockDim.x / 32) ? scratch[lane] : -CUDART_INF_F;
  v = warp_max(v);
  __syncthreads();  // all reads done before scratch is reused by the next reduction
  return v;
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x / 32) ? scratch[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}

// x, out: `rows` rows of n elements; element i of a row sits i * xs (i * os) after
// the row's start, which row_calc gives for x (offset 0) and out (offset 1).
template <typename T>
__global__ void softmax_warp_per_row_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t n,
                                            int64_t xs, int64_t os, OffsetCalc<2> row_calc, bool safe) {
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together: shuffles below see all 32 lanes
  int64_t o[2];
  row_calc.offsets(row, o);
  const T* xr = x + o[0];
  T* yr = out + o[1];

  // Subtracting the row max keeps exp() from overflowing (softmax is shift-invariant).
  float m = -CUDART_INF_F;
  for (int64_t i = lane; i < n; i += 32) m = fmaxf(m, to_float(xr[i * xs]));
  m = warp_max(m);
  if (safe && m == -CUDART_INF_F) {  // nothing to attend to: 0, not NaN
    for (int64_t i = lane; i < n; i += 32) yr[i * os] = from_float<T>(0.0f);
    return;
  }
  float s = 0.0f;
  for (int64_t i = lane; i < n; i += 32) s += expf(to_float(xr[i * xs]) - m);
  s = warp_sum(s);
  for (int64_t i = lane; i < n; i += 32) yr[i * os] = from_float<T>(expf(to_float(xr[i * xs]) - m) / s);
}

// One block per row, for rows longer than a warp should walk alone.
template <typename T>
__global__ void softmax_block_per_row_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n, int64_t xs,
                                             int64_t os, OffsetCalc<2> row_calc, bool safe) {
  __shared__ float scratch[32];
  int64_t o[2];
  row_calc.offsets(blockIdx.x, o);
  const T* xr = x + o[0];
  T* yr = out + o[1];

  float m = -CUDART_INF_F;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, to_float(xr[i * xs]));
  m = block_max(m, scratch);
  if (safe && m == -CUDART_INF_F) {  // the block agrees on m, so it leaves together
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i * os] = from_float<T>(0.0f);
    return;
  }
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += expf(to_float(xr[i * xs]) - m);
  s = block_sum(s, scratch);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i * os] = from_float<T>(expf(to_float(xr[i * xs]) - m) / s);
}

namespace {

// x: any strides; out: contiguous, x's shape; the softmax runs along call.dim.
void launch_softmax(OpCall& call, bool safe) {
  const Tensor& x = call.input(0);
  Tensor& out = call.out;
  if (out.numel() == 0) return;
  const int d = static_cast<int>(call.dim);
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[d];
  const int64_t xs = x.dim() == 0 ? 0 : x.strides()[d], os = out.dim() == 0 ? 0 : out.strides()[d];
  const int64_t rows = out.numel() / n;
  Dims row_shape = x.shape();  // every index but `dim` names a row
  if (x.dim() > 0) row_shape[d] = 1;
  const auto row_calc = make_offset_calc<2>(row_shape, {x.strides(), out.strides()});
  visit_float_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    if (n <= kSoftmaxWarpMaxRow) {
      const unsigned blocks = static_cast<unsigned>(ceil_div(rows, kSoftmaxWarpRowsPerBlock));
      launch(softmax_warp_per_row_kernel<T>, blocks, 32 * kSoftmaxWarpRowsPerBlock, px, po, rows, n, xs, os, row_calc,
             safe);
    } else {
      launch(softmax_block_per_row_kernel<T>, static_cast<unsigned>(rows), kSoftmaxBlockThreads, px, po, n, xs, os,
             row_calc, safe);
    }
  });
}

}  // namespace

void softmax_cuda_naive(OpCall& call) { launch_softmax(call, /*safe=*/false); }
void safe_softmax_cuda_naive(OpCall& call) { launch_softmax(call, /*safe=*/true); }

}  // namespace ts
