// ops/reduce/reduce_cpu_ref.cpp: rung 0 of sum and max over a dim.
//
// What:  for every output element, walk the reduced dim through its stride.
//        sum accumulates in double (an f32 running sum stops growing at 2^24:
//        sum(ones(2^25)) would read 16777216, PyTorch's reads 33554432) and
//        rounds once at the store; max keeps the first index of the largest
//        value, and a NaN wins (it propagates, as in PyTorch).
// Cost:  one read of the input, one write per output element.
#include <cmath>

#include "ops/cpu_loops.h"
#include "ops/reduce/reduce_layout.h"

namespace ts {

namespace {

// Calls row(x_offset, out_offset) for every output element; the caller walks `dim`.
template <typename Row>
void for_each_row(const Tensor& x, const ReduceAttrs& attrs, const Tensor& out, Row row) {
  const ReduceLayout layout = reduce_layout(x, attrs, out);
  for_each_offset<2>(layout.rows, {layout.x_strides, layout.out_strides},
                     [&](const auto& o) { row(o[0], o[1]); });
}

}  // namespace

void sum_cpu_ref(const Tensor& x, const ReduceAttrs& attrs, Tensor& out) {
  const int64_t n = x.dim() ? x.shape()[static_cast<int>(attrs.dim)] : 1;
  const int64_t stride = x.dim() ? x.strides()[static_cast<int>(attrs.dim)] : 0;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* px = static_cast<const T*>(x.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      for_each_row(x, attrs, out, [&](int64_t xo, int64_t oo) {
        double acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += load_f32(px, xo + i * stride);
        store_f32(po, oo, static_cast<float>(acc));
      });
    }
  });
}

void max_cpu_ref(const Tensor& x, const ReduceAttrs& attrs, Tensor& out, Tensor& indices) {
  const int64_t n = x.dim() ? x.shape()[static_cast<int>(attrs.dim)] : 1;
  const int64_t stride = x.dim() ? x.strides()[static_cast<int>(attrs.dim)] : 0;
  int64_t* pi = static_cast<int64_t*>(indices.data_ptr());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* px = static_cast<const T*>(x.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      // values and indices are both contiguous with the same shape: one output offset serves both.
      for_each_row(x, attrs, out, [&](int64_t xo, int64_t oo) {
        float best = load_f32(px, xo);
        int64_t best_i = 0;
        for (int64_t i = 1; i < n && !std::isnan(best); ++i) {
          const float v = load_f32(px, xo + i * stride);
          if (v > best || std::isnan(v)) {
            best = v;
            best_i = i;
          }
        }
        store_f32(po, oo, best);
        pi[oo] = best_i;
      });
    }
  });
}

}  // namespace ts
