// ops/elementwise/elementwise_functors.cuh: the scalar function of every
// elementwise op, in f32, for the CUDA rungs (the same formulas as the CPU
// reference, elementwise_cpu_ref.cpp). Each rung's kernel is a template over
// one of these, so the three rungs compute bit-identical results.
//
// Functors and kernels live in ts:: (not an anonymous namespace) so that traces
// show short names: ts::elementwise_binary_vec16_kernel<__nv_bfloat16, ts::AddOp>.
#pragma once

#include "ops/cuda_common.cuh"
#include "ops/elementwise/elementwise.h"
#include "ops/elementwise/gelu_math.h"

namespace ts {

struct AddOp {
  float alpha;
  __device__ float operator()(float a, float b) const { return a + alpha * b; }
};
struct SubOp {
  float alpha;
  __device__ float operator()(float a, float b) const { return a - alpha * b; }
};
struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }  // IEEE division (nvcc's -prec-div default)
};
struct NegOp {
  __device__ float operator()(float x) const { return -x; }
};
struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
};
struct TanhOp {
  __device__ float operator()(float x) const { return tanhf(x); }
};
// Both gelu forms avoid 1 + (something near -1): see gelu_math.h.
struct GeluErfOp {  // x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2)
  __device__ float operator()(float x) const { return 0.5f * x * erfcf(x * -0.7071067811865476f); }
};
struct GeluTanhOp {  // 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
  __device__ float operator()(float x) const { return gelu_tanh_fast_f32(x); }
};
struct ReluOp {  // NaN propagates, as in PyTorch
  __device__ float operator()(float x) const { return x > 0.0f || isnan(x) ? x : 0.0f; }
};

// The functor of a binary op's attributes, and the scalar operand (0 when b is a tensor).
inline AddOp add_op(const BinaryAttrs& attrs) { return {static_cast<float>(attrs.alpha)}; }
inline SubOp sub_op(const BinaryAttrs& attrs) { return {static_cast<float>(attrs.alpha)}; }
inline float scalar_operand(const BinaryAttrs& attrs) { return static_cast<float>(attrs.scalar.value_or(0.0)); }

}  // namespace ts
