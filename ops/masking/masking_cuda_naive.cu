// ops/masking/masking_cuda_naive.cu: rung 1 of masked_fill_, where, triu and tril on CUDA.
//
// What changed from rung 0 (masking_cpu_ref.cpp): one thread per element.
//        These ops select, they never compute: a kernel per element type that
//        moves elements (any dtype, bool masks included).
//        masked_fill_ writes only where the mask is true; the out-of-place
//        masked_fill pays a whole clone first (the hidden copy of the
//        attention lesson).
// Cost:  one read of each input element, one write: memory-bound.
// Try:   ./build/dev/ts_tests -tc='cuda: every variant*'
#include "ops/checks.h"
#include "ops/cuda_common.cuh"
#include "ops/masking/masking.h"

namespace ts {

// x[o[0]] = value where mask[o[1]] (the mask broadcast to x's shape); x is written in place.
template <typename T>
__global__ void masked_fill_kernel(T* __restrict__ x, const bool* __restrict__ mask, int64_t n, OffsetCalc<2> calc,
                                   T value) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[2];
    calc.offsets(i, o);
    if (mask[o[1]]) x[o[0]] = value;
  }
}

// out[o[3]] = cond[o[0]] ? a[o[1]] : b[o[2]], all three inputs broadcast.
template <typename T>
__global__ void where_kernel(const bool* __restrict__ cond, const T* __restrict__ a, const T* __restrict__ b,
                             T* __restrict__ out, int64_t n, OffsetCalc<4> calc) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[4];
    calc.offsets(i, o);
    out[o[3]] = cond[o[0]] ? a[o[1]] : b[o[2]];
  }
}

// triu (kUpper) keeps column - row >= diagonal, tril keeps column - row <= diagonal,
// in the last two dims [rows, cols]; out is contiguous, so its linear index gives (row, col).
template <typename T, bool kUpper>
__global__ void triangle_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n, int64_t rows, int64_t cols,
                                int64_t diagonal, OffsetCalc<1> x_calc) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t col = i % cols, row = (i / cols) % rows;
    const bool keep = kUpper ? col - row >= diagonal : col - row <= diagonal;
    if (keep) {
      int64_t o[1];
      x_calc.offsets(i, o);
      out[i] = x[o[0]];
    } else {
      out[i] = T{};  // all-zero bits: 0 in every dtype
    }
  }
}

namespace {

template <bool kUpper>
void launch_triangle(const Tensor& x, int64_t diagonal, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int nd = x.dim();
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(triangle_kernel<T, kUpper>, grid_for(n), kThreads, static_cast<const T*>(x.data_ptr()),
           static_cast<T*>(out.data_ptr()), n, x.shape()[nd - 2], x.shape()[nd - 1], diagonal,
           make_offset_calc<1>(x.shape(), {x.strides()}));
  });
}

}  // namespace

// x: any dtype and strides, written in place; mask: bool, broadcastable to x.
void masked_fill__cuda_naive(const Tensor&, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& x) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const auto calc = make_offset_calc<2>(x.shape(), {x.strides(), broadcast_strides(mask, x.shape())});
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(masked_fill_kernel<T>, grid_for(n), kThreads, static_cast<T*>(x.data_ptr()),
           static_cast<const bool*>(mask.data_ptr()), n, calc, cuda_value<T>(attrs.value));
  });
}

// cond: bool; a, b: one dtype; all broadcast to out [*] (contiguous).
void where_cuda_naive(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Dims& shape = out.shape();
  const auto calc = make_offset_calc<4>(
      shape, {broadcast_strides(cond, shape), broadcast_strides(a, shape), broadcast_strides(b, shape), out.strides()});
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(where_kernel<T>, grid_for(n), kThreads, static_cast<const bool*>(cond.data_ptr()),
           static_cast<const T*>(a.data_ptr()), static_cast<const T*>(b.data_ptr()), static_cast<T*>(out.data_ptr()), n,
           calc);
  });
}

void triu_cuda_naive(const Tensor& x, const TriangleAttrs& attrs, Tensor& out) {
  launch_triangle<true>(x, attrs.diagonal, out);
}
void tril_cuda_naive(const Tensor& x, const TriangleAttrs& attrs, Tensor& out) {
  launch_triangle<false>(x, attrs.diagonal, out);
}

}  // namespace ts
