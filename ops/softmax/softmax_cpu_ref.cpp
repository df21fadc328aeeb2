// ops/softmax/softmax_cpu_ref.cpp: rung 0 of softmax and _safe_softmax: the oracle.
//
// What:  per row along `dim`: m = max(x), s = sum(exp(x - m)), y = exp(x - m) / s.
//        Subtracting the max changes nothing mathematically (softmax is
//        shift-invariant) but keeps exp from overflowing. exp in f32, the sum
//        in double (an f32 sum of 2^25 ones stops at 2^24: every y would be
//        twice too large), each y rounded once.
// Safe:  a row that is entirely -inf has m = -inf and x - m = NaN; the safe
//        variant returns 0 for such rows (what attention wants for a query
//        that may attend to nothing), the plain one returns NaN like PyTorch.
// Cost:  two passes over each row (max, then exp-sum), one write.
#include <cmath>
#include <limits>

#include "ops/cpu_loops.h"
#include "ops/softmax/softmax.h"

namespace ts {

namespace {

void softmax_rows(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out, bool safe) {
  // Nothing to write. (The rows of an empty x along a size-0 dim would still be walked,
  // through strides that an empty view may carry up to INT64_MAX.)
  if (x.numel() == 0) return;
  const int d = static_cast<int>(attrs.dim);
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[d];
  const int64_t xs = x.dim() == 0 ? 1 : x.strides()[d], os = out.dim() == 0 ? 1 : out.strides()[d];
  Dims rows = x.shape();  // iterate every index but `dim`
  if (x.dim() > 0) rows[d] = 1;
  std::vector<float> e(static_cast<size_t>(n));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* px = static_cast<const T*>(x.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      for_each_offset<2>(rows, {x.strides(), out.strides()}, [&](const auto& o) {
        float m = -std::numeric_limits<float>::infinity();
        // A NaN wins the max (std::fmax would skip it): the row becomes NaN, as in PyTorch,
        // and m is -inf only when every element is -inf.
        for (int64_t i = 0; i < n; ++i) {
          const float v = load_f32(px, o[0] + i * xs);
          if (v > m || std::isnan(v)) m = v;
          if (std::isnan(m)) break;
        }
        if (safe && m == -std::numeric_limits<float>::infinity()) {
          for (int64_t i = 0; i < n; ++i) store_f32(po, o[1] + i * os, 0.0f);
          return;
        }
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += e[static_cast<size_t>(i)] = std::exp(load_f32(px, o[0] + i * xs) - m);
        for (int64_t i = 0; i < n; ++i)
          store_f32(po, o[1] + i * os, static_cast<float>(e[static_cast<size_t>(i)] / s));
      });
    }
  });
}

}  // namespace

void softmax_cpu_ref(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out) {
  softmax_rows(x, attrs, out, /*safe=*/false);
}
void safe_softmax_cpu_ref(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out) {
  softmax_rows(x, attrs, out, /*safe=*/true);
}

}  // namespace ts
