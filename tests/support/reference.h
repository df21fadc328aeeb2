// tests/support/reference.h: float64 references for the CPU op tests, and input makers.
//
// A Ref is a shape plus its values in row-major order, in double. Every
// reference below is written from the op's definition with plain index
// arithmetic, never through ts ops, so a bug in a kernel cannot hide in its
// oracle. Inputs are made with a fixed seed (printed by CHECK_CLOSE on failure)
// and the reference reads back the values the op actually saw (already rounded
// to bf16/f16), so only the op's own arithmetic is measured.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ops/attention/attention.h"  // every op's descriptor (ts::ops::add, ...), for the tests that name ops
#include "ops/copy/copy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/factories/factories.h"
#include "ops/geglu/geglu.h"
#include "ops/masking/masking.h"
#include "ops/matmul/matmul.h"
#include "ops/reduce/reduce.h"
#include "ops/softmax/softmax.h"
#include "ops/views/views.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tests/support/compare.h"

namespace ts::testing {

constexpr DType kFloatDTypes[] = {DType::f32, DType::bf16, DType::f16};

struct Ref {
  Dims shape;
  std::vector<double> v;  // row-major
};

inline Ref ref_of(const Tensor& x) { return {x.shape(), x.to_vector<double>()}; }

// Flat row-major index -> multi-index.
inline Dims unravel(int64_t flat, const Dims& shape) {
  Dims index = Dims::filled(shape.size(), 0);
  for (int d = shape.size() - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// Flat row-major position in `shape` of `index`, where index is aligned to the
// right with a (possibly longer) broadcast shape and size-1 dims read index 0.
inline int64_t broadcast_flat(const Dims& shape, const Dims& index) {
  const int lead = index.size() - shape.size();
  int64_t flat = 0;
  for (int d = 0; d < shape.size(); ++d) flat = flat * shape[d] + (shape[d] == 1 ? 0 : index[lead + d]);
  return flat;
}

inline Dims ref_broadcast_shape(const Dims& a, const Dims& b) {
  const int n = std::max(a.size(), b.size());
  Dims out = Dims::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    const int ia = a.size() - n + i, ib = b.size() - n + i;
    const int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

inline Ref ref_unary(const Ref& x, const std::function<double(double)>& f) {
  Ref out{x.shape, x.v};
  for (double& e : out.v) e = f(e);
  return out;
}

inline Ref ref_binary(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Ref out{ref_broadcast_shape(a.shape, b.shape), {}};
  const int64_t n = numel_of(out.shape);
  out.v.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const Dims index = unravel(i, out.shape);
    out.v[static_cast<size_t>(i)] = f(a.v[static_cast<size_t>(broadcast_flat(a.shape, index))],
                                      b.v[static_cast<size_t>(broadcast_flat(b.shape, index))]);
  }
  return out;
}

// Calls fn(flat indices of the n elements along `dim`, output flat index) per row.
template <typename Fn>
void for_each_ref_row(const Dims& shape, int dim, Fn fn) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= shape[d];
  for (int d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape.empty() ? 1 : shape[dim];
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k) idx[static_cast<size_t>(k)] = (o * n + k) * inner + i;
      fn(idx, o * inner + i);
    }
}

inline Dims reduced(const Dims& shape, int dim, bool keepdim) {
  Dims out = shape;
  if (shape.empty()) return out;
  if (keepdim) {
    out[dim] = 1;
  } else {
    out.erase(dim);
  }
  return out;
}

inline Ref ref_softmax(const Ref& x, int dim, bool safe) {
  Ref out{x.shape, std::vector<double>(x.v.size())};
  for_each_ref_row(x.shape, dim, [&](const std::vector<int64_t>& idx, int64_t) {
    double m = -INFINITY;
    bool any_nan = false;
    for (int64_t i : idx) {
      const double e = x.v[static_cast<size_t>(i)];
      any_nan |= std::isnan(e);
      m = std::max(m, e);
    }
    if (safe && m == -INFINITY && !any_nan) {
      for (int64_t i : idx) out.v[static_cast<size_t>(i)] = 0;
      return;
    }
    double s = 0;
    for (int64_t i : idx) s += std::exp(x.v[static_cast<size_t>(i)] - m);
    for (int64_t i : idx)
      out.v[static_cast<size_t>(i)] = any_nan ? NAN : std::exp(x.v[static_cast<size_t>(i)] - m) / s;
  });
  return out;
}

inline Ref ref_sum(const Ref& x, int dim, bool keepdim) {
  Ref out{reduced(x.shape, dim, keepdim), {}};
  out.v.resize(static_cast<size_t>(numel_of(out.shape)));
  for_each_ref_row(x.shape, dim, [&](const std::vector<int64_t>& idx, int64_t o) {
    double s = 0;
    for (int64_t i : idx) s += x.v[static_cast<size_t>(i)];
    out.v[static_cast<size_t>(o)] = s;
  });
  return out;
}

// Values and indices of the max along dim: the first index wins ties, the first NaN wins outright.
inline std::pair<Ref, std::vector<int64_t>> ref_max(const Ref& x, int dim, bool keepdim) {
  Ref out{reduced(x.shape, dim, keepdim), {}};
  std::vector<int64_t> indices(static_cast<size_t>(numel_of(out.shape)));
  out.v.resize(indices.size());
  for_each_ref_row(x.shape, dim, [&](const std::vector<int64_t>& idx, int64_t o) {
    size_t best = 0;
    for (size_t k = 1; k < idx.size(); ++k) {
      const double b = x.v[static_cast<size_t>(idx[best])], e = x.v[static_cast<size_t>(idx[k])];
      if (std::isnan(b)) break;
      if (std::isnan(e) || e > b) best = k;
    }
    out.v[static_cast<size_t>(o)] = x.v[static_cast<size_t>(idx[best])];
    indices[static_cast<size_t>(o)] = static_cast<int64_t>(best);
  });
  return {out, indices};
}

// torch.matmul in double: 1-D operands promoted (and the added dim dropped), batch dims broadcast.
inline Ref ref_matmul(const Ref& a, const Ref& b) {
  Dims as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(0, 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as[as.size() - 1], N = bs[bs.size() - 1];
  const Dims batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  const Dims batch = ref_broadcast_shape(batch_a, batch_b);
  const int64_t B = numel_of(batch);
  Ref out;
  out.shape = batch;
  if (a.shape.size() > 1) out.shape.push_back(M);
  if (b.shape.size() > 1) out.shape.push_back(N);
  out.v.resize(static_cast<size_t>(B * M * N));
  for (int64_t bi = 0; bi < B; ++bi) {
    const Dims index = unravel(bi, batch);
    const int64_t ba = broadcast_flat(batch_a, index), bb = broadcast_flat(batch_b, index);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += a.v[static_cast<size_t>((ba * M + i) * K + k)] * b.v[static_cast<size_t>((bb * K + k) * N + j)];
        out.v[static_cast<size_t>((bi * M + i) * N + j)] = acc;
      }
  }
  return out;
}

inline Ref ref_transpose_last2(const Ref& x) {
  const int n = x.shape.size();
  Ref out{x.shape, std::vector<double>(x.v.size())};
  std::swap(out.shape[n - 2], out.shape[n - 1]);
  const int64_t R = x.shape[n - 2], C = x.shape[n - 1], B = numel_of(x.shape) / std::max<int64_t>(R * C, 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j)
        out.v[static_cast<size_t>((b * C + j) * R + i)] = x.v[static_cast<size_t>((b * R + i) * C + j)];
  return out;
}

// softmax(q k^T * scale + mask) v with PyTorch's math-path rules: a bool mask keeps
// true, a float mask is added, causal keeps key j for query i when j <= i, and a
// query with no allowed key gives 0.
inline Ref ref_sdpa(const Ref& q, const Ref& k, const Ref& v, const Ref* mask, bool mask_is_bool, bool causal,
                    double scale = 0) {
  const int64_t D = q.shape.back();
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(D));
  Ref scores = ref_matmul(q, ref_transpose_last2(k));
  for (size_t i = 0; i < scores.v.size(); ++i) {
    const Dims index = unravel(static_cast<int64_t>(i), scores.shape);
    const int64_t row = index[index.size() - 2], col = index[index.size() - 1];
    double s = scores.v[i] * scale;
    if (causal && col > row) s = -INFINITY;
    if (mask != nullptr) {
      const double m = mask->v[static_cast<size_t>(broadcast_flat(mask->shape, index))];
      s = mask_is_bool ? (m != 0 ? s : -INFINITY) : s + m;
    }
    scores.v[i] = s;
  }
  return ref_matmul(ref_softmax(scores, scores.shape.size() - 1, /*safe=*/true), v);
}

// ---- inputs ------------------------------------------------------------------------------

// How an input is laid out in memory: the op must give the same values for each.
enum class Layout { contiguous, transposed, stepped, expanded, expanded_last };

inline const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::contiguous: return "contiguous";
    case Layout::transposed: return "transposed";
    case Layout::stepped: return "stepped";
    case Layout::expanded: return "expanded";
    case Layout::expanded_last: return "expanded_last";
  }
  return "?";
}

constexpr Layout kLayouts[] = {Layout::contiguous, Layout::transposed, Layout::stepped, Layout::expanded};
// For the right operand of a matrix product (see make_input).
constexpr Layout kRightLayouts[] = {Layout::contiguous, Layout::transposed, Layout::stepped, Layout::expanded_last};

// Standard normal values of `shape`, seeded, laid out as asked:
//   transposed: the last two dims are a transpose() view of a [.., n, m] tensor;
//   stepped:    the last dim is a slice with step 2 (and an offset) of a wider tensor;
//   expanded:   dim 0 is a stride-0 expand of a size-1 dim (every row equal);
//   expanded_last: the same for the last dim of a tensor of 2 or more dims.
// A layout that does not apply to the shape falls back to contiguous.
// Matrix products take `expanded` for their left operand and `expanded_last`
// for their right one: a stride-0 reduction dim would make every output a
// plain sum of one operand, whose cancellation f32 cannot resolve to 1e-5.
inline Tensor make_input(const Dims& shape, DType dtype, uint64_t seed, Layout layout = Layout::contiguous,
                         double scale = 1) {
  manual_seed(seed);
  auto values = [&](const Dims& s) { return scale == 1 ? randn(s, dtype) : mul(randn(s, dtype), scale); };
  const int n = shape.size();
  Tensor x;
  if (layout == Layout::transposed && n >= 2) {
    Dims swapped = shape;
    std::swap(swapped[n - 1], swapped[n - 2]);
    x = values(swapped).transpose(-1, -2);
  } else if (layout == Layout::stepped && n >= 1) {
    Dims wide = shape;
    wide[n - 1] = 2 * shape[n - 1] + 1;
    x = values(wide).slice(-1, 1, wide[n - 1], 2);
  } else if (layout == Layout::expanded && n >= 1 && shape[0] > 1) {
    Dims one = shape;
    one[0] = 1;
    x = values(one).expand(shape);
  } else if (layout == Layout::expanded_last && n >= 2 && shape[n - 1] > 1) {
    Dims one = shape;
    one[n - 1] = 1;
    x = values(one).expand(shape);
  } else {
    x = values(shape);
  }
  REQUIRE(x.shape() == shape);
  return x;
}

// Runs fn once per CPU variant of `op` (enumerated from the registry), with
// that variant forced by a VariantOverride.
template <typename Fn>
void for_each_cpu_variant(const OpDef* op, Fn&& fn) {
  int ran = 0;
  for (const Variant& v : op->rungs) {
    if (!v.runs_on(DeviceType::cpu)) continue;
    INFO("variant ", std::string(v.name));
    VariantOverride use(v.name);
    fn(v);
    ++ran;
  }
  REQUIRE_MESSAGE(ran > 0, "no cpu variant registered for ", op->name);
}

// Runs fn once per combination of the CPU variants of several ops (a composite
// and the ops it calls), each forced by a VariantOverride.
template <typename Fn>
void for_each_cpu_variant_combination(std::span<const OpDef* const> ops, Fn&& fn) {
  if (ops.empty()) {
    fn();
    return;
  }
  for_each_cpu_variant(ops[0], [&](const Variant&) { for_each_cpu_variant_combination(ops.subspan(1), fn); });
}

}  // namespace ts::testing
