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

// The scalar functions, in f32, as named functors: the same formulas as the
// CUDA rungs' (elementwise_functors.cuh). A debugger breaking in a kernel below
// stops after its prologue (a lambda defined inside the kernel would be laid
// out before it and keep gdb from finding the prologue's end).
struct AddOp {
  float alpha;
  float operator()(float x, float y) const { return x + alpha * y; }  // alpha = 1: 1 * y is y exactly
};
struct SubOp {
  float alpha;
  float operator()(float x, float y) const { return x - alpha * y; }
};
struct MulOp {
  float operator()(float x, float y) const { return x * y; }
};
struct DivOp {
  float operator()(float x, float y) const { return x / y; }
};
struct NegOp {
  float operator()(float v) const { return -v; }
};
struct ExpOp {
  float operator()(float v) const { return std::exp(v); }
};
struct TanhOp {
  float operator()(float v) const { return std::tanh(v); }
};
// Both gelu forms avoid 1 + (something near -1): see gelu_math.h.
struct GeluErfOp {  // x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2)
  float operator()(float v) const { return 0.5f * v * std::erfc(v * -0.7071067811865476f); }
};
struct GeluTanhOp {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): see gelu_math.h
  float operator()(float v) const { return gelu_tanh_f32(v); }
};
struct ReluOp {  // NaN propagates (v > 0 is false for NaN, so return v itself then), as in PyTorch
  float operator()(float v) const { return v > 0.0f || std::isnan(v) ? v : 0.0f; }
};

}  // namespace

void add_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  binary_loop(a, b, attrs, out, AddOp{static_cast<float>(attrs.alpha)});
}

void sub_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  binary_loop(a, b, attrs, out, SubOp{static_cast<float>(attrs.alpha)});
}

void mul_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  binary_loop(a, b, attrs, out, MulOp{});
}

void div_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  binary_loop(a, b, attrs, out, DivOp{});
}

void neg_cpu_ref(const Tensor& x, Tensor& out) { unary_loop(x, out, NegOp{}); }
void exp_cpu_ref(const Tensor& x, Tensor& out) { unary_loop(x, out, ExpOp{}); }
void tanh_cpu_ref(const Tensor& x, Tensor& out) { unary_loop(x, out, TanhOp{}); }
void relu_cpu_ref(const Tensor& x, Tensor& out) { unary_loop(x, out, ReluOp{}); }

void gelu_cpu_ref(const Tensor& x, const GeluAttrs& attrs, Tensor& out) {
  if (attrs.approximate == GeluApprox::tanh) {
    unary_loop(x, out, GeluTanhOp{});
  } else {
    unary_loop(x, out, GeluErfOp{});
  }
}

}  // namespace ts
