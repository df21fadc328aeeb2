// ops/factories/factories_cpu_ref.cpp: rung 0 of fill_, arange, rand, randn.
//
// The generator is counter-based: value i of a draw is a pure function of
// (seed, offset + i), a splitmix64 hash. That makes a draw reproducible on
// any device and in any order, at the cost of statistical finesse we do not
// need for test inputs.
#include <cmath>
#include <numbers>

#include "ops/cpu_loops.h"
#include "ops/factories/factories.h"
#include "ops/int_conversion.h"

namespace ts {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) on a grid of 2^-bits: the top `bits` bits of the hash. 24 bits are
// exact in f32.
float uniform(uint64_t seed, uint64_t counter, int bits = 24) {
  return std::ldexp(static_cast<float>(splitmix64(seed ^ splitmix64(counter)) >> (64 - bits)), -bits);
}

// Significand bits of a float dtype. rand draws that many, as PyTorch's uniform_ does, so
// every value is exact in the dtype: rounding a finer value could carry it up to 1.0.
int significand_bits(DType dtype) { return dtype == DType::bf16 ? 8 : dtype == DType::f16 ? 11 : 24; }

template <typename Fn>
void fill_contiguous(Tensor& out, Fn value_at) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(out.data_ptr());
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
        p[i] = T(static_cast<float>(value_at(i)));
      } else {
        p[i] = numeric_cast<T>(value_at(i));
      }
    }
  });
}

}  // namespace

void fill_cpu_ref(const FillAttrs& attrs, Tensor& x) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T value;
    if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      value = T(static_cast<float>(attrs.value));
    } else {
      value = numeric_cast<T>(attrs.value);
    }
    T* p = static_cast<T*>(x.data_ptr());
    for_each_offset<1>(x.shape(), {x.strides()}, [&](const auto& o) { p[o[0]] = value; });
  });
}

void arange_cpu_ref(const ArangeAttrs& attrs, Tensor& out) {
  if (attrs.integer) {
    // start + i * step in uint64, which wraps where an int64 product could overflow: the sum is the
    // exact value, an int64 (it lies between start and end).
    const auto start = static_cast<uint64_t>(attrs.int_start), step = static_cast<uint64_t>(attrs.int_step);
    fill_contiguous(out, [&](int64_t i) { return static_cast<int64_t>(start + static_cast<uint64_t>(i) * step); });
    return;
  }
  const double start = attrs.start, step = attrs.step;
  fill_contiguous(out, [&](int64_t i) { return start + static_cast<double>(i) * step; });
}

void rand_cpu_ref(const RandomAttrs& attrs, Tensor& out) {
  const uint64_t seed = attrs.seed, offset = attrs.offset;
  const int bits = significand_bits(out.dtype());
  fill_contiguous(out, [&](int64_t i) { return uniform(seed, offset + 2 * static_cast<uint64_t>(i), bits); });
}

void randn_cpu_ref(const RandomAttrs& attrs, Tensor& out) {
  const uint64_t seed = attrs.seed, offset = attrs.offset;
  fill_contiguous(out, [&](int64_t i) {
    // Box-Muller: two uniforms per value; 1 - u keeps the log's argument in (0, 1].
    const uint64_t c = offset + 2 * static_cast<uint64_t>(i);
    const float u1 = 1.0f - uniform(seed, c), u2 = uniform(seed, c + 1);
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
  });
}

}  // namespace ts
