// ops/int_conversion.h: a floating value as int64, defined for every input.
//
// A C++ cast of NaN, an infinity or a value outside int64's range is undefined
// behaviour. to_int64 truncates toward zero like the cast and gives INT64_MIN
// for those values: what x86's conversion instruction (cvttsd2si) and CUDA's
// __double2ll_rz return, so PyTorch on these machines gives the same. That is
// the rule for converting tensors (to, copy_). A scalar the user writes into an
// int64 tensor (full, fill_, masked_fill, from_vector) is checked instead, as
// PyTorch does: fits_int64 says whether it converts without overflow, and the
// front ends refuse it otherwise (ops/checks.h, check_fill_value).
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define TS_INT_CONVERSION_HD __host__ __device__
#else
#define TS_INT_CONVERSION_HD
#endif

namespace ts {

// Whether v, truncated toward zero, is an int64: false for NaN, the infinities and
// values outside [-2^63, 2^63). -2^63 is exact in double; 2^63 is the first value
// past the range. NaN fails both comparisons.
TS_INT_CONVERSION_HD inline bool fits_int64(double v) {
  return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

TS_INT_CONVERSION_HD inline int64_t to_int64(double v) {
  if (!fits_int64(v)) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// static_cast<To>(v) for arithmetic To, with to_int64 where To is int64_t.
template <typename To, typename From>
TS_INT_CONVERSION_HD inline To numeric_cast(From v) {
  if constexpr (std::is_same_v<To, int64_t> && std::is_floating_point_v<From>) {
    return to_int64(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ts
