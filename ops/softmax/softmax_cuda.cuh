// ops/softmax/softmax_cuda.cuh: what the two CUDA rungs of softmax share: the
// layout of the rows and a max in which a NaN wins.
#pragma once

#include "ops/cuda_common.cuh"
#include "ops/softmax/softmax.h"

namespace ts {

constexpr int kSoftmaxWarpRowsPerBlock = 4;   // warp rung: 4 warps (4 rows) per block of 128 threads
constexpr int64_t kSoftmaxWarpMaxRow = 1024;  // longest row the warp rung takes (32 elements per lane)

// max(a, b) in which a NaN wins: a row holding a NaN softmaxes to NaN (as in
// PyTorch) and is never mistaken for an all -inf row. fmaxf would skip the NaN.
__device__ __forceinline__ float max_nan(float a, float b) { return (a > b || isnan(a)) ? a : b; }

__device__ __forceinline__ float warp_max_nan(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// x: any strides; out: contiguous, x's shape; the softmax runs along `dim`. The
// rows: every index but `dim`; element i of a row sits i * xs (i * os) after the
// row's start, which row_calc gives for x (offset 0) and out (offset 1).
struct SoftmaxRows {
  int64_t rows, n, xs, os;
  OffsetCalc<2> row_calc;
  SoftmaxRows(const Tensor& x, const Tensor& out, int d) {
    n = x.dim() == 0 ? 1 : x.shape()[d];
    xs = x.dim() == 0 ? 0 : x.strides()[d];
    os = out.dim() == 0 ? 0 : out.strides()[d];
    rows = n == 0 ? 0 : out.numel() / n;
    Dims row_shape = x.shape();
    if (x.dim() > 0) row_shape[d] = 1;
    row_calc = make_offset_calc<2>(row_shape, {x.strides(), out.strides()});
  }
};

}  // namespace ts
