// ops/cpu_loops.h: the strided loops the CPU reference kernels share.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/tensor.h"

namespace ts {

// Calls fn(offsets) for every index of `shape` in row-major order, where
// offsets[k] = sum_d index[d] * strides[k][d] (element offsets, one per operand).
// Broadcast operands pass stride 0 on the broadcast dims. The stride of a size-1
// dim is never added: it is never used, and a view may carry any value there
// (as_strided, up to INT64_MAX), which the odometer would overflow.
template <size_t N, typename Fn>
void for_each_offset(const Dims& shape, const std::array<Dims, N>& strides, Fn&& fn) {
  const int nd = shape.size();
  if (numel_of(shape) == 0) return;
  std::array<int64_t, N> offsets{};
  if (nd == 0) {
    fn(offsets);
    return;
  }
  // The innermost dim runs as a plain loop; outer dims advance like an odometer.
  const int64_t inner = shape[nd - 1];
  std::array<int64_t, N> inner_stride{};
  for (size_t k = 0; k < N; ++k) inner_stride[k] = inner > 1 ? strides[k][nd - 1] : 0;
  Dims index = Dims::filled(nd, 0);
  for (;;) {
    std::array<int64_t, N> at = offsets;
    for (int64_t i = 0; i < inner; ++i) {
      fn(at);
      for (size_t k = 0; k < N; ++k) at[k] += inner_stride[k];
    }
    int d = nd - 2;
    for (; d >= 0; --d) {
      if (shape[d] == 1) continue;
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Loads an element as float (bf16/f16 widen exactly) and stores float with one rounding.
template <typename T>
inline float load_f32(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}
template <typename T>
inline void store_f32(T* p, int64_t i, float v) {
  p[i] = T(v);
}

}  // namespace ts
