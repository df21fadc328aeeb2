// ops/elementwise/gelu_math.h: the tanh-approximated GELU, one definition for
// every kernel that computes it (gelu on CPU and CUDA, the fused GeGLU).
//
//   gelu_tanh(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
// computed as x * sigmoid(2u) = x / (1 + exp(-2u)), the same function: this
// form never forms 1 + (something near -1), which for x < -3 cancels to a
// few f32 ulps and loses most digits of the tiny result.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif

namespace ts {

TS_HOST_DEVICE inline float gelu_tanh_f32(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}

#if defined(__CUDACC__)
// The same function for CUDA kernels, with the special-function unit's exp
// (__expf: ex2.approx and a multiply) and a fast divide (__fdividef: rcp and a
// multiply) instead of the IEEE sequences: a few f32 ulps of difference, far
// below bf16/f16 rounding, and about a quarter of the instructions. At
// [8192, 3072] the exact form's instruction count, not memory, sets the time.
// For x -> -inf the divisor overflows to inf and the result is -0, as it should be.
__device__ __forceinline__ float gelu_tanh_fast_f32(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return __fdividef(x, 1.0f + __expf(-2.0f * u));
}
#endif

}  // namespace ts
