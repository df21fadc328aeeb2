// ops/softmax/softmax_cuda_warp.cu: the top rung of softmax and _safe_softmax on
// CUDA, for rows of up to 1024 elements.
//
// What changed from the block rung (softmax_cuda_block.cu): a row this short
//        does not need a block: one warp per row, the 32 lanes stride over it
//        and combine their partial max and sum with shuffles: no shared
//        memory and no barrier, and four rows per block of 128 threads.
// Cost:  three reads of each row (max, sum, write pass) and one write; a row of
//        <= 1024 elements stays in L1 after the first read.
// Try:   TS_VARIANT=softmax/cuda/warp ./build/dev/ts_ladder --op softmax --device cuda
#include <math_constants.h>

#include "ops/softmax/softmax_cuda.cuh"

namespace ts {

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
  for (int64_t i = lane; i < n; i += 32) m = max_nan(m, to_float(xr[i * xs]));
  m = warp_max_nan(m);
  // m is -inf only when every element is -inf (a NaN wins the max): nothing to attend to: 0, not NaN.
  if (safe && m == -CUDART_INF_F) {
    for (int64_t i = lane; i < n; i += 32) yr[i * os] = from_float<T>(0.0f);
    return;
  }
  float s = 0.0f;
  for (int64_t i = lane; i < n; i += 32) s += expf(to_float(xr[i * xs]) - m);
  s = warp_sum(s);
  for (int64_t i = lane; i < n; i += 32) yr[i * os] = from_float<T>(expf(to_float(xr[i * xs]) - m) / s);
}

bool softmax_cuda_warp_supports(const OpCall& call, std::string* why) {
  const Tensor& x = call.input(0);
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[call.attrs<SoftmaxAttrs>().dim];
  if (n <= kSoftmaxWarpMaxRow) return true;
  if (why) *why = fmt::format("rows of at most {} elements (one warp per row); got {} along dim {} of shape {}",
                              kSoftmaxWarpMaxRow, n, call.attrs<SoftmaxAttrs>().dim, x.shape());
  return false;
}

namespace {

void launch_softmax_warp(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out, bool safe) {
  const SoftmaxRows r(x, out, static_cast<int>(attrs.dim));
  if (r.rows == 0) return;
  visit_float_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unsigned blocks = static_cast<unsigned>(ceil_div(r.rows, kSoftmaxWarpRowsPerBlock));
    launch(softmax_warp_per_row_kernel<T>, blocks, 32 * kSoftmaxWarpRowsPerBlock, static_cast<const T*>(x.data_ptr()),
           static_cast<T*>(out.data_ptr()), r.rows, r.n, r.xs, r.os, r.row_calc, safe);
  });
}

}  // namespace

void softmax_cuda_warp(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out) {
  launch_softmax_warp(x, attrs, out, /*safe=*/false);
}
void safe_softmax_cuda_warp(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out) {
  launch_softmax_warp(x, attrs, out, /*safe=*/true);
}

}  // namespace ts
