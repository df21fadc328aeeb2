// ops/masking/masking_cpu_ref.cpp: rung 0 of masked_fill_, where, triu, tril.
//
// Cost: one read of each input element and one write; no arithmetic.
#include "ops/checks.h"
#include "ops/cpu_loops.h"
#include "ops/int_conversion.h"
#include "ops/masking/masking.h"

namespace ts {

namespace {

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
    return T(static_cast<float>(v));
  } else {
    return numeric_cast<T>(v);
  }
}

// out[..., i, j] = keep(j - i) ? x[..., i, j] : 0 over the last two dims.
template <typename Keep>
void triangle(const Tensor& x, Tensor& out, Keep keep) {
  const int nd = x.dim();  // >= 2, checked by the op's prepare step
  if (out.numel() == 0) return;  // (the batch of an empty x may have strides up to INT64_MAX)
  const int64_t rows = x.shape()[nd - 2], cols = x.shape()[nd - 1];
  const int64_t x_row = x.strides()[nd - 2], x_col = x.strides()[nd - 1];
  const int64_t out_row = out.strides()[nd - 2], out_col = out.strides()[nd - 1];
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    Dims batch = x.shape();  // one iteration per matrix
    batch[nd - 2] = batch[nd - 1] = 1;
    for_each_offset<2>(batch, {x.strides(), out.strides()}, [&](const auto& o) {
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) po[o[1] + i * out_row + j * out_col] = keep(j - i) ? px[o[0] + i * x_row + j * x_col] : T{};
    });
  });
}

}  // namespace

void masked_fill__cpu_ref(const Tensor&, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& x) {
  const bool* pm = static_cast<const bool*>(mask.data_ptr());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T value = from_double<T>(attrs.value);
    T* px = static_cast<T*>(x.data_ptr());
    for_each_offset<2>(x.shape(), {x.strides(), broadcast_strides(mask, x.shape())}, [&](const auto& o) {
      if (pm[o[1]]) px[o[0]] = value;
    });
  });
}

void where_cpu_ref(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  const bool* pc = static_cast<const bool*>(cond.data_ptr());
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a.data_ptr());
    const T* pb = static_cast<const T*>(b.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    for_each_offset<4>(out.shape(),
                       {broadcast_strides(cond, out.shape()), broadcast_strides(a, out.shape()),
                        broadcast_strides(b, out.shape()), out.strides()},
                       [&](const auto& o) { po[o[3]] = pc[o[0]] ? pa[o[1]] : pb[o[2]]; });
  });
}

void triu_cpu_ref(const Tensor& x, const TriangleAttrs& attrs, Tensor& out) {
  const int64_t diagonal = attrs.diagonal;
  triangle(x, out, [diagonal](int64_t j_minus_i) { return j_minus_i >= diagonal; });
}

void tril_cpu_ref(const Tensor& x, const TriangleAttrs& attrs, Tensor& out) {
  const int64_t diagonal = attrs.diagonal;
  triangle(x, out, [diagonal](int64_t j_minus_i) { return j_minus_i <= diagonal; });
}

}  // namespace ts
