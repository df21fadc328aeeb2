// bench/ladder_compare.h: how ts_ladder decides that a rung computed what the reference did.
//
// Every element of a rung's output is compared with the reference's (rung 0's)
// output, both read as doubles in row-major order:
//   - NaN-aware: a NaN or an infinity must sit where the reference has the same
//     one. ts_ladder fills every output with NaN before a rung runs, so an element
//     the rung never wrote is a NaN where the reference is finite: a failure.
//   - the relative L2 error ||out - ref|| / ||ref|| over the finite elements must
//     not exceed the tolerance of the output's dtype (tolerance() below);
//   - the report names the worst element (the largest absolute difference, or
//     the first non-finite mismatch), the max absolute error and the relative error.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace ts::ladder {

// What an op's rungs may legitimately disagree on.
enum class Numerics {
  exact,        // one rounding per element from the same f32 math (elementwise, copies, masks, max)
  accumulates,  // sums in another order (GEMM, softmax, sum, attention): f32 results differ in the last bits
};

// Relative L2 error allowed between a rung's output and the reference's, by the output's dtype:
//   f32   1e-5 exact, 1e-4 when the summation order differs (observed: ~1e-7 for both)
//   bf16  1e-2 (8 mantissa bits: one rounding is up to 3.9e-3 of an element)
//   f16   5e-3 (11 mantissa bits)
//   bool, i64 (masks, argmax indices): 0, they must match exactly
inline double tolerance(DType dtype, Numerics numerics) {
  switch (dtype) {
    case DType::f32: return numerics == Numerics::exact ? 1e-5 : 1e-4;
    case DType::bf16: return 1e-2;
    case DType::f16: return 5e-3;
    case DType::b8:
    case DType::i64: return 0;
  }
  return 0;
}

struct Comparison {
  bool ok = true;
  double rel_err = 0;    // ||out - ref|| / ||ref|| over the elements finite in both
  double max_abs = 0;    // the largest |out - ref| over those elements
  double max_rel = 0;    // the largest |out - ref| / |ref| over those elements with ref != 0
  int64_t mismatched_nonfinite = 0;  // elements where out and ref are not the same NaN/inf
  int64_t worst = -1;    // flat index of the worst element (-1: none)
  double worst_got = 0, worst_want = 0;
  std::string size_problem;  // non-empty when the element counts differ
};

inline Comparison compare(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  Comparison c;
  if (got.size() != want.size()) {
    c.ok = false;
    c.size_problem = fmt::format("{} elements, the reference has {}", got.size(), want.size());
    return c;
  }
  double diff2 = 0, ref2 = 0;
  int64_t first_nonfinite = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (!std::isfinite(g) || !std::isfinite(w)) {
      const bool same = (std::isnan(g) && std::isnan(w)) || g == w;  // the same infinity
      if (!same) {
        if (first_nonfinite < 0) first_nonfinite = static_cast<int64_t>(i);
        ++c.mismatched_nonfinite;
      }
      continue;
    }
    const double d = std::fabs(g - w);
    diff2 += d * d;
    ref2 += w * w;
    if (w != 0) c.max_rel = std::max(c.max_rel, d / std::fabs(w));
    if (c.worst < 0 || d > c.max_abs) {
      c.max_abs = d;
      c.worst = static_cast<int64_t>(i);
    }
  }
  c.rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0);
  if (first_nonfinite >= 0) c.worst = first_nonfinite;
  if (c.worst >= 0) {
    c.worst_got = got[static_cast<size_t>(c.worst)];
    c.worst_want = want[static_cast<size_t>(c.worst)];
  }
  c.ok = c.mismatched_nonfinite == 0 && c.rel_err <= tol;
  return c;
}

// A flat row-major index as a multi-index of `shape`: "[12, 7]".
inline std::string index_in(int64_t flat, const Dims& shape) {
  std::vector<int64_t> index(static_cast<size_t>(shape.size()));
  for (int d = shape.size() - 1; d >= 0; --d) {
    const int64_t size = shape[d] > 0 ? shape[d] : 1;
    index[static_cast<size_t>(d)] = flat % size;
    flat /= size;
  }
  std::string text = "[";
  for (size_t d = 0; d < index.size(); ++d) text += fmt::format("{}{}", d ? ", " : "", index[d]);
  return text + "]";
}

// One line for a failed comparison: what differs and where.
inline std::string describe_failure(const Comparison& c, double tol, const Dims& shape) {
  if (!c.size_problem.empty()) return c.size_problem;
  std::string text = fmt::format("rel err {:.2e} (tolerance {:.0e}), max abs {:.3g}, max rel {:.3g}", c.rel_err, tol,
                                 c.max_abs, c.max_rel);
  if (c.mismatched_nonfinite > 0)
    text += fmt::format(", {} NaN/inf where the reference differs (an element never written reads NaN)",
                        c.mismatched_nonfinite);
  if (c.worst >= 0)
    text += fmt::format("; worst {}: got {:.6g}, want {:.6g}", index_in(c.worst, shape), c.worst_got, c.worst_want);
  return text;
}

}  // namespace ts::ladder
