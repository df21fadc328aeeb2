// ops/elementwise/elementwise_cpu_ref.cpp: rung 0 of every elementwise op: the oracle.
//
// What:  out[i] = f(a[i], b[i]) over the broadcast shape, reading inputs
//        through their strides (0 on broadcast dims); f computed in f32 and
//        rounded once to the output dtype, as the CUDA kernels do.
// Cost:  one read of each input element, one write: memory-bound.
// Try:   TS_VARIANT=add/cpu/ref ./build/dev/tutorials/01_matmul_add --device cpu
#include <cmath>

#include "ops/checks.h"
#include "ops/cpu_loops.h"
#include "ops/elementwise/gelu_math.h"
#include "ops/elementwise/elementwise.h"

namespace ts {

namespace {

// out = op(a, b) with b a tensor (broadcast) or, when b is null, the scalar operand.
template <typename Op>
void binary_loop(const Tensor& a, const Tensor* b_tensor, const BinaryAttrs& attrs, Tensor& out, Op op) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* pa = static_cast<const T*>(a.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      if (b_tensor == nullptr) {
        const float b = static_cast<float>(attrs.scalar.value());
        for_each_offset<2>(out.shape(), {broadcast_strides(a, out.shape()), out.strides()},
                           [&](const auto& o) { store_f32(po, o[1], op(load_f32(pa, o[0]), b)); });
        return;
      }
      const Tensor& b = *b_tensor;
      const T* pb = static_cast<const T*>(b.data_ptr());
      if (a.is_contiguous() && b.is_contiguous() && a.shape() == out.shape() && b.shape() == out.shape()) {
        const int64_t n = out.numel();  // the common case: one flat loop
        for (int64_t i = 0; i < n; ++i) store_f32(po, i, op(load_f32(pa, i), load_f32(pb, i)));
        return;
      }
      for_each_offset<3>(out.shape(),
                         {broadcast_strides(a, out.shape()), broadcast_strides(b, out.shape()), out.strides()},
                         [&](const auto& o) { store_f32(po, o[2], op(load_f32(pa, o[0]), load_f32(pb, o[1]))); });
    }
  });
}

template <typename Op>
void unary_loop(const Tensor& x, Tensor& out, Op op) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* px = static_cast<const T*>(x.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      for_each_offset<2>(out.shape(), {x.strides(), out.strides()},
                         [&](const auto& o) { store_f32(po, o[1], op(load_f32(px, o[0]))); });
    }
  });
}

}  // namespace

void add_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  const float alpha = static_cast<float>(attrs.alpha);
  if (alpha == 1.0f) {
    binary_loop(a, b, attrs, out, [](float x, float y) { return x + y; });
  } else {
    binary_loop(a, b, attrs, out, [alpha](float x, float y) { return x + alpha * y; });
  }
}

void sub_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  const float alpha = static_cast<float>(attrs.alpha);
  binary_loop(a, b, attrs, out, [alpha](float x, float y) { return x - alpha * y; });
}

void mul_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  binary_loop(a, b, attrs, out, [](float x, float y) { return x * y; });
}

void div_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  binary_loop(a, b, attrs, out, [](float x, float y) { return x / y; });
}

void neg_cpu_ref(const Tensor& x, Tensor& out) {
  unary_loop(x, out, [](float v) { return -v; });
}

void exp_cpu_ref(const Tensor& x, Tensor& out) {
  unary_loop(x, out, [](float v) { return std::exp(v); });
}

void tanh_cpu_ref(const Tensor& x, Tensor& out) {
  unary_loop(x, out, [](float v) { return std::tanh(v); });
}

void gelu_cpu_ref(const Tensor& x, const GeluAttrs& attrs, Tensor& out) {
  // Both forms are written so that no 1 + (something near -1) is formed: for x < -3 that sum
  // cancels to a few f32 ulps and loses most digits of the (tiny) result.
  if (attrs.approximate == GeluApprox::tanh) {
    unary_loop(x, out, gelu_tanh_f32);  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): see gelu_math.h
  } else {
    // Exact: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2).
    unary_loop(x, out, [](float v) { return 0.5f * v * std::erfc(v * -0.7071067811865476f); });
  }
}

void relu_cpu_ref(const Tensor& x, Tensor& out) {
  // NaN propagates (v > 0 is false for NaN, so return v itself then), as in PyTorch.
  unary_loop(x, out, [](float v) { return v > 0.0f || std::isnan(v) ? v : 0.0f; });
}

}  // namespace ts
