// tests/test_dtype.cpp: bf16/f16 conversions (round to nearest even) and dtype names.
//
// The oracle for float -> 16-bit rounding is written independently of
// tensor/dtype.h: among all finite 16-bit values (plus Inf just past the
// largest), take the nearest in double arithmetic and break ties towards the
// even bit pattern.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/error.h"

namespace {

using ts::bf16_bits_to_float;
using ts::f16_bits_to_float;
using ts::float_to_bf16_bits;
using ts::float_to_f16_bits;

// f16 decoded by the IEEE 754 definition (not by bit tricks).
double f16_value(uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -v : v;
}

double bf16_value(uint16_t bits) {
  const int sign = bits >> 15, exponent = (bits >> 7) & 0xff, mantissa = bits & 0x7f;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -133);
  } else if (exponent == 255) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(128 + mantissa, exponent - 134);
  }
  return sign ? -v : v;
}

bool f16_is_nan(uint16_t bits) { return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t bits) { return (bits & 0x7f80) == 0x7f80 && (bits & 0x7f) != 0; }

// Round-to-nearest-even of a finite float into a 16-bit format whose positive
// finite values are the bit patterns [0, inf_bits) with values value(bits),
// increasing. Inf (inf_bits) sits at `inf_at`: one ulp past the largest
// finite value, so the overflow threshold is the midpoint, as IEEE 754 says.
template <typename ValueFn>
uint16_t oracle_round(float x, uint16_t inf_bits, double inf_at, ValueFn value) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(x));
  auto at = [&](uint16_t bits) { return bits == inf_bits ? inf_at : value(bits); };
  // The first pattern whose value is >= a (binary search over the monotone finite range plus Inf).
  uint16_t lo = 0, hi = inf_bits;
  if (a >= inf_at) return sign | inf_bits;
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (at(mid) < a) {
      lo = static_cast<uint16_t>(mid + 1);
    } else {
      hi = mid;
    }
  }
  if (at(lo) == a || lo == 0) return sign | lo;
  const uint16_t below = static_cast<uint16_t>(lo - 1);
  const double d_below = a - at(below), d_above = at(lo) - a;
  if (d_below < d_above) return sign | below;
  if (d_above < d_below) return sign | lo;
  return sign | ((below & 1) == 0 ? below : lo);  // a tie: the even pattern
}

uint16_t oracle_f16(float x) { return oracle_round(x, 0x7c00, 65536.0, f16_value); }
uint16_t oracle_bf16(float x) { return oracle_round(x, 0x7f80, std::ldexp(1.0, 128), bf16_value); }

float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

TEST_CASE("dtype: names, sizes and parse_dtype") {
  CHECK(ts::element_size(ts::DType::f32) == 4);
  CHECK(ts::element_size(ts::DType::bf16) == 2);
  CHECK(ts::element_size(ts::DType::f16) == 2);
  CHECK(ts::element_size(ts::DType::b8) == 1);
  CHECK(ts::element_size(ts::DType::i64) == 8);
  CHECK(ts::parse_dtype("bfloat16") == ts::DType::bf16);
  CHECK(ts::parse_dtype("half") == ts::DType::f16);
  CHECK(ts::parse_dtype("f32") == ts::DType::f32);
  CHECK(ts::is_floating(ts::DType::bf16));
  CHECK_FALSE(ts::is_floating(ts::DType::i64));
  CHECK_THROWS_AS(ts::parse_dtype("f8"), ts::Error);
}

TEST_CASE("dtype: bf16 rounds to nearest, ties to even") {
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7 (bf16 keeps 7 mantissa bits).
  CHECK(float_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(float_to_bf16_bits(1.0f + 0x1p-8f) == 0x3f80);              // tie, 0x3f80 is even
  CHECK(float_to_bf16_bits(1.0f + 3 * 0x1p-8f) == 0x3f82);          // tie, 0x3f82 is even
  CHECK(float_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);   // just past the tie
  CHECK(float_to_bf16_bits(-(1.0f + 0x1p-8f)) == 0xbf80);
  // Overflow: FLT_MAX lies past the midpoint above bf16's largest finite value.
  CHECK(float_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(float_to_bf16_bits(from_bits(0x7f7f7fff)) == 0x7f7f);       // just below the midpoint
  CHECK(float_to_bf16_bits(-std::numeric_limits<float>::infinity()) == 0xff80);
  // Subnormals round like normals (same exponent range as f32).
  CHECK(float_to_bf16_bits(from_bits(0x00018000)) == 0x0002);       // tie between 1 and 2: even
  CHECK(float_to_bf16_bits(from_bits(0x00008000)) == 0x0000);       // tie between 0 and 1: even
  CHECK(float_to_bf16_bits(from_bits(0x00008001)) == 0x0001);
  // Signed zero and NaN.
  CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
  CHECK(std::signbit(bf16_bits_to_float(0x8000)));
  CHECK(bf16_is_nan(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN())));
  CHECK(bf16_is_nan(float_to_bf16_bits(from_bits(0x7f800001))));    // a signaling NaN whose payload is in the low bits
  CHECK(bf16_is_nan(float_to_bf16_bits(from_bits(0xffffffff))));
  CHECK(std::isnan(static_cast<float>(ts::bf16(NAN))));
}

TEST_CASE("dtype: f16 rounds to nearest, ties to even, with subnormals and overflow") {
  CHECK(float_to_f16_bits(1.0f) == 0x3c00);
  CHECK(float_to_f16_bits(1.0f + 0x1p-11f) == 0x3c00);               // tie, even
  CHECK(float_to_f16_bits(1.0f + 3 * 0x1p-11f) == 0x3c02);           // tie, even
  CHECK(float_to_f16_bits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
  CHECK(float_to_f16_bits(65504.0f) == 0x7bff);                      // largest finite
  CHECK(float_to_f16_bits(65519.0f) == 0x7bff);                      // below the midpoint
  CHECK(float_to_f16_bits(65520.0f) == 0x7c00);                      // the midpoint rounds to Inf (even)
  CHECK(float_to_f16_bits(1e10f) == 0x7c00);
  CHECK(float_to_f16_bits(-1e10f) == 0xfc00);
  CHECK(float_to_f16_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  // Subnormals: multiples of 2^-24.
  CHECK(float_to_f16_bits(0x1p-24f) == 0x0001);
  CHECK(float_to_f16_bits(0x1p-25f) == 0x0000);                      // tie between 0 and 1: even
  CHECK(float_to_f16_bits(0x1.8p-25f) == 0x0001);
  CHECK(float_to_f16_bits(3 * 0x1p-25f) == 0x0002);                  // tie between 1 and 2: even
  CHECK(float_to_f16_bits(1023.5f * 0x1p-24f) == 0x0400);            // rounds up into the smallest normal
  CHECK(float_to_f16_bits(0x1p-14f) == 0x0400);
  CHECK(float_to_f16_bits(1e-10f) == 0x0000);
  CHECK(float_to_f16_bits(-1e-10f) == 0x8000);                       // underflow keeps the sign
  CHECK(float_to_f16_bits(-0.0f) == 0x8000);
  CHECK(std::signbit(f16_bits_to_float(0x8000)));
  CHECK(f16_is_nan(float_to_f16_bits(std::numeric_limits<float>::quiet_NaN())));
  CHECK(f16_is_nan(float_to_f16_bits(from_bits(0x7f800001))));
  CHECK(f16_is_nan(float_to_f16_bits(-std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(static_cast<float>(ts::f16(NAN))));
}

TEST_CASE("dtype: every f16 bit pattern decodes exactly and round-trips through float") {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float f = f16_bits_to_float(bits);
    const double want = f16_value(bits);
    if (std::isnan(want)) {
      CHECK_MESSAGE(std::isnan(f), "bits ", b);
      CHECK_MESSAGE(f16_is_nan(float_to_f16_bits(f)), "bits ", b);
      continue;
    }
    if (static_cast<double>(f) != want || std::signbit(f) != std::signbit(want)) {
      FAIL_CHECK("f16 bits ", b, " decode to ", f, ", want ", want);
    }
    if (float_to_f16_bits(f) != bits) FAIL_CHECK("f16 bits ", b, " round-trip to ", float_to_f16_bits(f));
  }
}

TEST_CASE("dtype: every bf16 bit pattern decodes exactly and round-trips through float") {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float f = bf16_bits_to_float(bits);
    const double want = bf16_value(bits);
    if (std::isnan(want)) {
      CHECK_MESSAGE(std::isnan(f), "bits ", b);
      CHECK_MESSAGE(bf16_is_nan(float_to_bf16_bits(f)), "bits ", b);
      continue;
    }
    if (static_cast<double>(f) != want || std::signbit(f) != std::signbit(want)) {
      FAIL_CHECK("bf16 bits ", b, " decode to ", f, ", want ", want);
    }
    if (float_to_bf16_bits(f) != bits) FAIL_CHECK("bf16 bits ", b, " round-trip to ", float_to_bf16_bits(f));
  }
}

TEST_CASE("dtype: float -> f16/bf16 matches a nearest-even oracle on a sweep of f32 bit patterns") {
  // Every 4099th f32 pattern (about a million, covering every exponent, both
  // signs and many mantissa tails), plus all patterns near the halfway points
  // of a few f16/bf16 ulps.
  std::vector<uint32_t> patterns;
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) patterns.push_back(static_cast<uint32_t>(b));
  for (uint32_t mid : {0x3f808000u, 0x3f818000u, 0x477fe000u, 0x33000000u, 0x00008000u, 0x387fc000u})
    for (uint32_t d = 0; d < 64; ++d) {
      patterns.push_back(mid + d);
      patterns.push_back(mid - d);
    }
  int failures = 0;
  for (uint32_t p : patterns) {
    const float x = from_bits(p);
    if (std::isnan(x)) continue;
    if (failures < 10 && float_to_f16_bits(x) != oracle_f16(x)) {
      ++failures;
      FAIL_CHECK("f16 of f32 bits ", p, " (", x, "): got ", float_to_f16_bits(x), " want ", oracle_f16(x));
    }
    if (failures < 10 && float_to_bf16_bits(x) != oracle_bf16(x)) {
      ++failures;
      FAIL_CHECK("bf16 of f32 bits ", p, " (", x, "): got ", float_to_bf16_bits(x), " want ", oracle_bf16(x));
    }
  }
}
