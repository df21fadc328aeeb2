// ops/softmax/softmax_cuda_block.cu: rung 1 of softmax and _safe_softmax on CUDA.
//
// What changed from rung 0 (softmax_cpu_ref.cpp): rows run in parallel, one
//        block of 512 threads per row, and each row's max and sum are
//        reductions across the block: each warp reduces its share with
//        shuffles, then the warps' partials meet in shared memory. The same
//        three steps as the oracle: m = max(x), s = sum(exp(x - m)),
//        y = exp(x - m) / s, all in f32; each thread's share of s is a
//        compensated sum (RunningSum), so a row of 2^25 still sums to 1. A
//        NaN wins the max, so a row with a NaN becomes NaN; the safe variant
//        writes 0 for a row that is entirely -inf (m = -inf) instead of NaN.
// Cost:  three reads of each row (max, sum, write pass) and one write; rows that
//        fit in L1/L2 make the second and third reads cheap.
// Try:   TS_VARIANT=softmax/cuda/block ./build/dev/ts_ladder --op softmax --device cuda
#include <math_constants.h>

#include "ops/softmax/softmax_cuda.cuh"

namespace ts {

constexpr int kSoftmaxBlockThreads = 512;

// Every thread gets the reduction over the block. scratch holds one partial per warp.
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_max_nan(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();  // all partials written before any warp reads them
  v = lane < int(blockDim.x / 32) ? scratch[lane] : -CUDART_INF_F;
  v = warp_max_nan(v);
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
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = max_nan(m, to_float(xr[i * xs]));
  m = block_max(m, scratch);
  if (safe && m == -CUDART_INF_F) {  // the block agrees on m, so it leaves together
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i * os] = from_float<T>(0.0f);
    return;
  }
  RunningSum share;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) share.add(expf(to_float(xr[i * xs]) - m));
  const float s = block_sum(share.value(), scratch);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i * os] = from_float<T>(expf(to_float(xr[i * xs]) - m) / s);
}

namespace {

void launch_softmax_block(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out, bool safe) {
  const SoftmaxRows r(x, out, static_cast<int>(attrs.dim));
  if (r.rows == 0) return;
  visit_float_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(softmax_block_per_row_kernel<T>, static_cast<unsigned>(r.rows), kSoftmaxBlockThreads,
           static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), r.n, r.xs, r.os, r.row_calc, safe);
  });
}

}  // namespace

void softmax_cuda_block(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out) {
  launch_softmax_block(x, attrs, out, /*safe=*/false);
}
void safe_softmax_cuda_block(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out) {
  launch_softmax_block(x, attrs, out, /*safe=*/true);
}

}  // namespace ts
