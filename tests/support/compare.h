// tests/support/compare.h: compare a tensor with a float64 reference, NaN-aware.
//
// The reference is a std::vector<double> in row-major order, computed by the
// test in double precision. The check fails when
//   - a NaN/Inf appears in `got` where the reference is finite (or differs), or
//   - ||got - ref|| / ||ref|| exceeds the tolerance (relative error, L2),
// and its message names the worst element (index, got, want), the max
// absolute and max relative error, and the seed that made the inputs.
//
// CHECK_CLOSE_TO_TERMS divides by ||terms|| instead, each element's sum of the
// magnitudes of the terms that make it (for a weighted average sum_j p_j v_j:
// sum_j p_j |v_j|). That is the scale a sum's rounding error grows with, and the
// right one where the terms cancel and ||ref|| is small beside them.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace ts::testing {

// Relative L2 error bounds per dtype: f32 arithmetic lands far under 1e-3; bf16/f16 operands near 1e-2.
inline double tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32: return 1e-5;
    case DType::bf16: return 1e-2;
    case DType::f16: return 2e-3;
    default: return 0;
  }
}

struct Comparison {
  bool ok = true;
  std::string report;
};

// `terms`: empty, or the scale of each element (see above), whose L2 norm replaces ||want||'s.
inline Comparison compare(const Tensor& got_tensor, const std::vector<double>& want, double tolerance,
                          uint64_t seed = 0, const std::vector<double>& terms = {}) {
  Comparison c;
  const std::vector<double> got = got_tensor.to_vector<double>();
  if (got.size() != want.size() || (!terms.empty() && terms.size() != want.size())) {
    c.ok = false;
    c.report = fmt::format("size mismatch: got {} elements, want {}, terms {} (seed {})", got.size(), want.size(),
                           terms.size(), seed);
    return c;
  }
  double diff2 = 0, ref2 = 0, max_abs = 0, max_rel = 0;
  size_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (!std::isfinite(w) || !std::isfinite(g)) {
      const bool same = (std::isnan(g) && std::isnan(w)) || g == w;
      if (!same) {
        c.ok = false;
        c.report = fmt::format("non-finite mismatch at flat index {}: got {} want {} (seed {})", i, g, w, seed);
        return c;
      }
      continue;
    }
    const double d = std::fabs(g - w);
    diff2 += d * d;
    const double scale = terms.empty() ? w : terms[i];
    ref2 += scale * scale;
    if (d > max_abs) {
      max_abs = d;
      worst = i;
    }
    max_rel = std::max(max_rel, d / std::max(std::fabs(w), 1e-30));
  }
  const double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  c.ok = rel <= tolerance;
  c.report = fmt::format(
      "rel L2 error {:.3e}{} (tolerance {:.1e}); worst flat index {}: got {} want {}; max abs {:.3e}, max rel {:.3e}; "
      "seed {}",
      rel, terms.empty() ? "" : " of the terms' magnitude", tolerance, worst, got.empty() ? 0.0 : got[worst], want.empty() ? 0.0 : want[worst], max_abs, max_rel,
      seed);
  return c;
}

}  // namespace ts::testing

// CHECK_CLOSE(tensor, std::vector<double> ref, tolerance, seed)
#define CHECK_CLOSE(got, want, tol, seed)                                          \
  do {                                                                             \
    const ::ts::testing::Comparison ts_cmp_ = ::ts::testing::compare(got, want, tol, seed); \
    CHECK_MESSAGE(ts_cmp_.ok, ts_cmp_.report);                                     \
  } while (0)

// CHECK_CLOSE_TO_TERMS(tensor, ref, terms, tolerance, seed): the error over ||terms|| (see above)
#define CHECK_CLOSE_TO_TERMS(got, want, terms, tol, seed)                                   \
  do {                                                                                      \
    const ::ts::testing::Comparison ts_cmp_ = ::ts::testing::compare(got, want, tol, seed, terms); \
    CHECK_MESSAGE(ts_cmp_.ok, ts_cmp_.report);                                              \
  } while (0)
