// tensor/dtype.h: element types and the two 16-bit float formats.
//
// bf16 and f16 are stored as raw bits; conversion from float rounds to
// nearest, ties to even (as CUDA's __float2bfloat16_rn / __float2half_rn do).
// Arithmetic on them happens in float: load, compute in f32, round once.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ts {

enum class DType : uint8_t { f32, bf16, f16, b8, i64 };

constexpr size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::b8: return 1;
    case DType::i64: return 8;
  }
  return 0;
}

// PyTorch's spelling, as the profiler's "Input type" column and printing show it.
constexpr const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float";
    case DType::bf16: return "c10::BFloat16";
    case DType::f16: return "c10::Half";
    case DType::b8: return "bool";
    case DType::i64: return "long int";
  }
  return "?";
}

// Short name used on command lines and in file names: f32, bf16, f16, bool, i64.
constexpr const char* dtype_short_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::b8: return "bool";
    case DType::i64: return "i64";
  }
  return "?";
}

// As printed after a tensor's values: torch.bfloat16 -> ts.bfloat16.
constexpr const char* dtype_print_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "ts.float32";
    case DType::bf16: return "ts.bfloat16";
    case DType::f16: return "ts.float16";
    case DType::b8: return "ts.bool";
    case DType::i64: return "ts.int64";
  }
  return "?";
}

constexpr bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

// Parses f32|float32, bf16|bfloat16, f16|float16|half, bool, i64|int64; throws ts::Error otherwise.
DType parse_dtype(std::string_view name);

// ---- 16-bit floats -------------------------------------------------------

inline uint16_t float_to_bf16_bits(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

inline uint16_t float_to_f16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // Inf stays Inf; NaN stays a (quiet) NaN
    return static_cast<uint16_t>(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  if (magnitude < 0x38800000u) {  // below 2^-14: a half subnormal (or zero)
    // Half subnormals are multiples of 2^-24: scale exactly, round to nearest even.
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent (127 -> 15), then round 23 mantissa bits to 10.
  // A carry out of the mantissa bumps the exponent, up to Inf: that is correct rounding.
  uint32_t rebased = magnitude - 0x38000000u;
  rebased += 0x0fffu + ((rebased >> 13) & 1u);
  const uint32_t half = rebased >> 13;
  return static_cast<uint16_t>(sign | (half > 0x7c00u ? 0x7c00u : half));
}

inline float f16_bits_to_float(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float v = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  bf16(float v) : bits(float_to_bf16_bits(v)) {}  // NOLINT: implicit like __nv_bfloat16
  operator float() const { return bf16_bits_to_float(bits); }
};

struct f16 {
  uint16_t bits = 0;
  f16() = default;
  f16(float v) : bits(float_to_f16_bits(v)) {}  // NOLINT: implicit like __half
  operator float() const { return f16_bits_to_float(bits); }
};

// The C++ type stored for each DType.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<bf16>() { return DType::bf16; }
template <> constexpr DType dtype_of<f16>() { return DType::f16; }
template <> constexpr DType dtype_of<bool>() { return DType::b8; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }

// Calls fn(T{}) with T the storage type of `dtype`: one switch instead of five copies.
template <typename Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(float{});
    case DType::bf16: return fn(bf16{});
    case DType::f16: return fn(f16{});
    case DType::b8: return fn(bool{});
    case DType::i64: return fn(int64_t{});
  }
  return fn(float{});
}

}  // namespace ts
