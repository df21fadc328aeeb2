// tests/test_fuzz_views.cpp: a seeded random fuzzer of view chains and the ops after them.
//
// Each case makes a random base tensor (0 to 4 dims, sizes 0 to 5, zero-size dims
// included), applies a random chain of 1 to 6 view ops (t, transpose, permute, view,
// reshape, unsqueeze, squeeze, expand, narrow, slice, select, as_strided), then one op
// (sum, max, softmax, add, sub, mul, neg, contiguous, clone, mm, fill_), and checks it
// against an independent reference written here:
//   - the reference tracks (shape, strides, offset) over a std::vector<double> storage,
//     with PyTorch's rules for which arguments are valid;
//   - whether a view (view, and reshape's choice between a view and a copy) exists is
//     decided by brute force: the strides, if any, that map every row-major index of the
//     new shape to the storage element the old tensor has at that index;
//   - a step the reference calls impossible must throw ts::Error, a possible one must not
//     throw, and every result must hold the reference's values (exact: the storage holds
//     small integers; softmax within 1e-6) in the reference's shape, over the same
//     storage for a view.
// Only the public API of ops/ops.h and tensor/ is used.
//
// Every case is a function of (seed, case index): the failure message names both and
// the command that replays that case alone. Environment:
//   TS_FUZZ_SEED    the seed (default 2024; `make fuzz` draws a fresh one and prints it)
//   TS_FUZZ_CASES   how many cases (default 5000)
//   TS_FUZZ_FIRST   the first case index (default 0): with TS_FUZZ_CASES=1, one case
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "tests/support/case_rng.h"

using ts::Dims;
using ts::DType;
using ts::Tensor;

namespace {

using Shape = std::vector<int64_t>;

// ---- the reference -------------------------------------------------------------------------

// A view over a storage of doubles: element (i0, i1, ...) is storage[offset + sum i_k * strides[k]].
struct Ref {
  std::shared_ptr<std::vector<double>> storage;
  Shape shape, strides;
  int64_t offset = 0;

  int dim() const { return static_cast<int>(shape.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  // Storage index of every element, in row-major order.
  std::vector<int64_t> positions() const {
    std::vector<int64_t> out;
    const int64_t n = numel();
    out.reserve(static_cast<size_t>(n));
    Shape index(shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t p = offset;
      for (size_t d = 0; d < shape.size(); ++d) p += index[d] * strides[d];
      out.push_back(p);
      for (int d = dim() - 1; d >= 0; --d) {
        if (++index[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
    return out;
  }
  std::vector<double> values() const {
    std::vector<double> out;
    for (int64_t p : positions()) out.push_back((*storage)[static_cast<size_t>(p)]);
    return out;
  }
};

Shape row_major_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * std::max<int64_t>(shape[static_cast<size_t>(i) + 1], 1);
  return s;
}

// A fresh contiguous storage holding `values` in `shape`.
Ref dense(const Shape& shape, std::vector<double> values) {
  Ref r;
  r.storage = std::make_shared<std::vector<double>>(std::move(values));
  r.shape = shape;
  r.strides = row_major_strides(shape);
  return r;
}

// PyTorch's maybe_wrap_dim: a 0-d tensor takes dims 0 and -1.
std::optional<int> wrap(int64_t d, int ndim) {
  const int64_t n = std::max(ndim, 1);
  if (d < -n || d >= n) return std::nullopt;
  return static_cast<int>(d < 0 ? d + n : d);
}

// PyTorch's infer_size: one -1 may be inferred; other sizes must be >= 0 and match numel.
std::optional<Shape> infer(const Shape& wanted, int64_t numel) {
  Shape out = wanted;
  int at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (wanted[i] == -1) {
      if (at >= 0) return std::nullopt;
      at = static_cast<int>(i);
    } else if (wanted[i] < 0) {
      return std::nullopt;
    } else {
      known *= wanted[i];
    }
  }
  if (at >= 0) {
    if (known == 0 || numel % known != 0) return std::nullopt;
    out[static_cast<size_t>(at)] = numel / known;
  } else if (known != numel) {
    return std::nullopt;
  }
  return out;
}

// Brute force: the strides under which `shape` reads the elements of x in x's row-major
// order, if there are any. A dim of size 1 takes any stride (0 here); an empty tensor
// takes any strides.
std::optional<Ref> brute_force_view(const Ref& x, const Shape& shape) {
  Ref out{x.storage, shape, Shape(shape.size(), 0), x.offset};
  const int64_t n = x.numel();
  if (n == 0) {
    out.strides = row_major_strides(shape);
    return out;
  }
  const std::vector<int64_t> at = x.positions();
  out.offset = at[0];
  int64_t step = 1;  // the row-major distance of a unit step in dim d
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[static_cast<size_t>(d)] > 1) out.strides[static_cast<size_t>(d)] = at[static_cast<size_t>(step)] - at[0];
    step *= shape[static_cast<size_t>(d)];
  }
  const std::vector<int64_t> mine = out.positions();
  if (mine != at) return std::nullopt;
  return out;
}

// ---- random numbers ---------------------------------------------------------------------

using ts::testing::env_u64;

// Every case has its own stream (tests/support/case_rng.h), plus the draws this fuzzer needs.
struct Rng : ts::testing::CaseRng {
  using CaseRng::CaseRng;
  // A dim argument for a tensor of `ndim` dims: mostly valid, sometimes just out of range.
  int64_t dim(int ndim) {
    const int64_t n = std::max(ndim, 1);
    if (chance(0.04)) return chance(0.5) ? n + pick(0, 1) : -n - 1 - pick(0, 1);
    return pick(-n, n - 1);
  }
  // A size: mostly small, sometimes 0, rarely huge.
  int64_t size() { return chance(0.12) ? 0 : pick(1, 5); }
};

Dims to_dims(const Shape& s) { return Dims(s.begin(), s.end()); }
Shape to_shape(const Dims& d) { return Shape(d.begin(), d.end()); }

// ---- one case -------------------------------------------------------------------------------

// a + b * c exactly, or nothing when int64 cannot hold it: an empty view may carry
// strides near INT64_MAX (as_strided), and a storage offset or a stride computed from
// them may not fit. ts refuses such a view; the reference calls it impossible.
std::optional<int64_t> exact(int64_t a, int64_t b, int64_t c) {
  const __int128 v = static_cast<__int128>(a) + static_cast<__int128>(b) * c;
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min()) return std::nullopt;
  return static_cast<int64_t>(v);
}

struct State {
  Tensor t;
  Ref r;
};

struct Case {
  uint64_t seed, index;
  Rng rng;
  std::string log;  // what the case did so far, for the failure message
  bool failed = false;
  uint64_t compared = 0;  // elements checked against the reference

  Case(uint64_t s, uint64_t i) : seed(s), index(i), rng(s, i) {}

  std::string where() const {
    return fmt::format("fuzz seed {} case {} (replay: TS_FUZZ_SEED={} TS_FUZZ_FIRST={} TS_FUZZ_CASES=1)\n{}", seed,
                       index, seed, index, log);
  }

  void fail_case(const std::string& why) {
    failed = true;
    FAIL_CHECK(where(), "\n  -> ", why);
  }

  // Runs one ts step whose validity the reference decided: throws <=> !possible.
  // Returns the tensor when it ran.
  template <typename Fn>
  std::optional<Tensor> attempt(bool possible, Fn&& fn) {
    try {
      Tensor out = fn();
      if (!possible) {
        fail_case(fmt::format("the reference says this is impossible, but ts returned shape {}", out.shape()));
        return std::nullopt;
      }
      return out;
    } catch (const ts::Error& e) {
      if (possible) fail_case(fmt::format("the reference says this is possible, but ts threw: {}", e.what()));
      return std::nullopt;
    } catch (const std::exception& e) {
      fail_case(fmt::format("threw a non-ts::Error exception: {}", e.what()));
      return std::nullopt;
    }
  }

  // The tensor holds the reference's shape and values (exactly, or within rel_tol).
  void check_values(const Tensor& t, const Ref& r, double rel_tol = 0) {
    if (to_shape(t.shape()) != r.shape) {
      fail_case(fmt::format("shape {} but the reference has {}", t.shape(), fmt::join(r.shape, ", ")));
      return;
    }
    const std::vector<double> got = t.to_vector<double>(), want = r.values();
    compared += want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      const bool same = std::isnan(want[i]) ? std::isnan(got[i])
                                            : std::abs(got[i] - want[i]) <= rel_tol * std::max(1.0, std::abs(want[i]));
      if (!same) {
        fail_case(fmt::format("element {} is {}, the reference says {}", i, got[i], want[i]));
        return;
      }
    }
  }

  // A random base: 0 to 4 dims, storage values small integers (exact in f32, sums too).
  State base() {
    Shape shape(static_cast<size_t>(rng.pick(0, 4)));
    for (int64_t& s : shape) s = rng.size();
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<double> values(static_cast<size_t>(n));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(rng.pick(-9, 9));
    std::vector<float> host(values.begin(), values.end());
    State s{ts::from_vector(host, to_dims(shape)), dense(shape, values)};
    log += fmt::format("base = from_vector(shape [{}])\n", fmt::join(shape, ", "));
    return s;
  }

  // A shape with the same numel (a factorization), sometimes with a -1, sometimes wrong.
  Shape reshape_target(int64_t numel) {
    Shape out;
    int64_t left = numel;
    const int ndim = static_cast<int>(rng.pick(0, 4));
    for (int i = 0; i < ndim; ++i) {
      int64_t s = 1;
      if (left == 0) {
        s = rng.chance(0.5) ? 0 : rng.pick(1, 3);
      } else {
        std::vector<int64_t> divisors;
        for (int64_t d = 1; d <= left; ++d)
          if (left % d == 0) divisors.push_back(d);
        s = divisors[static_cast<size_t>(rng.pick(0, static_cast<int64_t>(divisors.size()) - 1))];
      }
      out.push_back(s);
      if (s != 0) left /= s;
    }
    if (left != 1 || numel == 0) out.push_back(left);  // the remaining factor (0 for an empty tensor)
    const auto any = [&] { return static_cast<size_t>(rng.pick(0, static_cast<int64_t>(out.size()) - 1)); };
    if (!out.empty() && rng.chance(0.25)) out[any()] = -1;
    if (!out.empty() && rng.chance(0.1)) out[any()] += rng.pick(1, 2);
    if (rng.chance(0.03)) out.push_back(-1);  // maybe two -1
    if (out.size() > static_cast<size_t>(ts::kMaxDims)) out.resize(static_cast<size_t>(ts::kMaxDims));
    return out;
  }

  // Whether ts makes the view the reference describes. One rule beyond PyTorch's: no tensor,
  // not even an empty one, whose data_ptr() lies more than int64 bytes past its storage
  // (PyTorch forms that pointer anyway). The storage holds f32: 4 bytes an element.
  static bool exists(const std::optional<Ref>& r) {
    return r.has_value() && !(r->numel() == 0 && r->offset > std::numeric_limits<int64_t>::max() / 4);
  }

  // A huge argument (near the int64 limits), in the cases that allow one.
  bool huge_argument() { return rng.chance(0.05); }

  // Applies one random view op to s (in place); false when the step threw (as it should have).
  bool view_step(State& s) {
    const Ref& r = s.r;
    const int n = r.dim();
    std::optional<Ref> want;  // the reference's result, when the step is possible
    std::optional<Tensor> got;
    bool shares_storage = true;  // a view: the result reads the same storage
    switch (rng.pick(0, 12)) {
      case 0: {  // t
        log += "t()\n";
        if (n <= 2) {
          want = r;
          if (n == 2) {
            std::swap(want->shape[0], want->shape[1]);
            std::swap(want->strides[0], want->strides[1]);
          }
        }
        got = attempt(exists(want), [&] { return ts::t(s.t); });
        break;
      }
      case 1: {  // transpose
        const int64_t d0 = rng.dim(n), d1 = rng.dim(n);
        log += fmt::format("transpose({}, {})\n", d0, d1);
        const auto w0 = wrap(d0, n), w1 = wrap(d1, n);
        if (w0 && w1) {
          want = r;
          if (n > 0) {
            std::swap(want->shape[static_cast<size_t>(*w0)], want->shape[static_cast<size_t>(*w1)]);
            std::swap(want->strides[static_cast<size_t>(*w0)], want->strides[static_cast<size_t>(*w1)]);
          }
        }
        got = attempt(exists(want), [&] { return ts::transpose(s.t, d0, d1); });
        break;
      }
      case 2: {  // permute
        Shape order(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i - (rng.chance(0.3) ? n : 0);
        std::shuffle(order.begin(), order.end(), rng.engine);
        if (rng.chance(0.1) && n > 0) order[0] = rng.dim(n);  // maybe a repeat or out of range
        if (rng.chance(0.05)) order.push_back(0);             // maybe one too many
        log += fmt::format("permute([{}])\n", fmt::join(order, ", "));
        bool ok = static_cast<int>(order.size()) == n;
        std::vector<bool> seen(static_cast<size_t>(std::max(n, 1)), false);
        Ref out = r;
        for (size_t i = 0; ok && i < order.size(); ++i) {
          const auto w = wrap(order[i], n);
          ok = w.has_value() && !seen[static_cast<size_t>(*w)];
          if (!ok) break;
          seen[static_cast<size_t>(*w)] = true;
          out.shape[i] = r.shape[static_cast<size_t>(*w)];
          out.strides[i] = r.strides[static_cast<size_t>(*w)];
        }
        if (ok) want = out;
        got = attempt(exists(want), [&] { return ts::permute(s.t, to_dims(order)); });
        break;
      }
      case 3:
      case 4: {  // view, reshape
        const bool is_view = rng.chance(0.5);
        const Shape target = reshape_target(r.numel());
        log += fmt::format("{}([{}])\n", is_view ? "view" : "reshape", fmt::join(target, ", "));
        const std::optional<Shape> shape = infer(target, r.numel());
        std::optional<Ref> as_view = shape ? brute_force_view(r, *shape) : std::nullopt;
        if (is_view) {
          want = as_view;
        } else if (shape) {
          want = as_view ? *as_view : dense(*shape, r.values());
          shares_storage = as_view.has_value();
        }
        got = attempt(exists(want), [&] {
          return is_view ? ts::view(s.t, to_dims(target)) : ts::reshape(s.t, to_dims(target));
        });
        if (!is_view && got && r.numel() > 0 && (got->storage() == s.t.storage()) != shares_storage)
          fail_case(shares_storage ? "reshape copied although a view exists" : "reshape returned a view that cannot exist");
        if (!is_view && r.numel() == 0) shares_storage = got && got->storage() == s.t.storage();
        break;
      }
      case 5: {  // unsqueeze
        const int64_t d = rng.chance(0.9) ? rng.pick(-(n + 1), n) : (rng.chance(0.5) ? n + 1 : -(n + 2));
        log += fmt::format("unsqueeze({})\n", d);
        if (d >= -(n + 1) && d <= n && n < ts::kMaxDims) {  // at most kMaxDims dims in ts
          const size_t at = static_cast<size_t>(d < 0 ? d + n + 1 : d);
          want = r;
          want->shape.insert(want->shape.begin() + static_cast<std::ptrdiff_t>(at), 1);
          want->strides.insert(want->strides.begin() + static_cast<std::ptrdiff_t>(at), 0);
        }
        got = attempt(exists(want), [&] { return ts::unsqueeze(s.t, d); });
        break;
      }
      case 6: {  // squeeze, squeeze(dim)
        const bool all = rng.chance(0.4);
        const int64_t d = rng.dim(n);
        log += all ? std::string("squeeze()\n") : fmt::format("squeeze({})\n", d);
        const auto w = wrap(d, n);
        if (all || w) {
          Ref out = r;
          out.shape.clear();
          out.strides.clear();
          for (int i = 0; i < n; ++i) {
            const bool drop = r.shape[static_cast<size_t>(i)] == 1 && (all || i == *w);
            if (drop) continue;
            out.shape.push_back(r.shape[static_cast<size_t>(i)]);
            out.strides.push_back(r.strides[static_cast<size_t>(i)]);
          }
          want = out;
        }
        got = attempt(exists(want), [&] { return all ? ts::squeeze(s.t) : ts::squeeze(s.t, d); });
        break;
      }
      case 7: {  // expand
        const int lead = static_cast<int>(rng.pick(0, std::min<int64_t>(2, ts::kMaxDims - n)));
        Shape target;
        for (int i = 0; i < lead; ++i) target.push_back(rng.chance(0.05) ? -1 : rng.pick(0, 3));
        for (int i = 0; i < n; ++i) {
          const int64_t have = r.shape[static_cast<size_t>(i)];
          const double u = std::uniform_real_distribution<double>(0, 1)(rng.engine);
          target.push_back(u < 0.3 ? -1 : u < 0.6 ? have : have == 1 ? rng.pick(0, 4) : u < 0.95 ? have : rng.pick(0, 5));
        }
        // Keep the reference cheap: at most 4096 elements after the expansion.
        int64_t grown = 1;
        for (size_t i = 0; i < target.size(); ++i) {
          const int64_t have = i < static_cast<size_t>(lead) ? 1 : r.shape[i - static_cast<size_t>(lead)];
          grown *= std::max<int64_t>(target[i] == -1 ? have : target[i], 1);
        }
        if (grown > 4096)
          for (size_t i = 0; i < target.size(); ++i) target[i] = i < static_cast<size_t>(lead) ? 1 : -1;
        if (rng.chance(0.03) && !target.empty()) target.back() = -2;
        if (rng.chance(0.03) && n > 0) target.erase(target.begin());  // fewer sizes than dims
        log += fmt::format("expand([{}])\n", fmt::join(target, ", "));
        bool ok = static_cast<int>(target.size()) >= n;
        Ref out{r.storage, {}, {}, r.offset};
        const int lead_dims = static_cast<int>(target.size()) - n;
        for (int i = 0; ok && i < static_cast<int>(target.size()); ++i) {
          const int64_t want_size = target[static_cast<size_t>(i)];
          if (i < lead_dims) {
            ok = want_size >= 0;
            out.shape.push_back(want_size);
            out.strides.push_back(0);
            continue;
          }
          const int64_t have = r.shape[static_cast<size_t>(i - lead_dims)];
          if (want_size == -1 || want_size == have) {
            out.shape.push_back(have);
            out.strides.push_back(r.strides[static_cast<size_t>(i - lead_dims)]);
          } else {
            ok = have == 1 && want_size >= 0;
            out.shape.push_back(want_size);
            out.strides.push_back(0);
          }
        }
        if (ok) want = out;
        got = attempt(exists(want), [&] { return ts::expand(s.t, to_dims(target)); });
        break;
      }
      case 8: {  // narrow
        const int64_t d = rng.dim(n);
        const auto w = wrap(d, n);
        const int64_t size = w && n > 0 ? r.shape[static_cast<size_t>(*w)] : 0;
        int64_t start = rng.chance(0.9) ? rng.pick(-size, size) : rng.pick(-size - 1, size + 1);
        int64_t length = rng.chance(0.9) ? rng.pick(0, size - (start < 0 ? start + size : start)) : rng.pick(-1, size + 1);
        if (huge_argument()) (rng.chance(0.5) ? start : length) = std::numeric_limits<int64_t>::max() - rng.pick(0, 2);
        log += fmt::format("narrow({}, {}, {})\n", d, start, length);
        if (n > 0 && w && start >= -size && start <= size) {
          const int64_t first = start < 0 ? start + size : start;
          const std::optional<int64_t> offset = exact(r.offset, first, r.strides[static_cast<size_t>(*w)]);
          if (length >= 0 && length <= size - first && offset) {
            want = r;
            want->shape[static_cast<size_t>(*w)] = length;
            want->offset = *offset;
          }
        }
        got = attempt(exists(want), [&] { return ts::narrow(s.t, d, start, length); });
        break;
      }
      case 9: {  // slice
        const int64_t d = rng.dim(n);
        const auto w = wrap(d, n);
        const int64_t size = w && n > 0 ? r.shape[static_cast<size_t>(*w)] : 0;
        int64_t start = rng.pick(-size - 2, size + 2), end = rng.pick(-size - 2, size + 2);
        int64_t step = rng.chance(0.05) ? -rng.pick(0, 1) : rng.pick(1, 3);
        if (huge_argument()) {
          const int64_t big = std::numeric_limits<int64_t>::max() - rng.pick(0, 2);
          switch (rng.pick(0, 2)) {
            case 0: step = big; break;
            case 1: end = big; break;
            default: start = -big; break;
          }
        }
        log += fmt::format("slice({}, {}, {}, {})\n", d, start, end, step);
        if (n > 0 && w && step > 0) {
          const auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? (v < -size ? 0 : v + size) : v, 0, size); };
          const int64_t first = clamp(start), last = std::max(first, clamp(end));
          const size_t at = static_cast<size_t>(*w);
          const int64_t length = (last - first) / step + ((last - first) % step != 0);  // ceil, without overflow
          // A stride of a size-0 or -1 dim is never used: it stays as it was.
          const std::optional<int64_t> stride = length > 1 ? exact(0, r.strides[at], step) : r.strides[at];
          const std::optional<int64_t> offset = exact(r.offset, first, r.strides[at]);
          if (stride && offset) {
            want = r;
            want->shape[at] = length;
            want->strides[at] = *stride;
            want->offset = *offset;
          }
        }
        got = attempt(exists(want), [&] { return ts::slice(s.t, d, start, end, step); });
        break;
      }
      case 10: {  // select
        const int64_t d = rng.dim(n);
        const auto w = wrap(d, n);
        const int64_t size = w && n > 0 ? r.shape[static_cast<size_t>(*w)] : 0;
        int64_t index = rng.chance(0.9) && size > 0 ? rng.pick(-size, size - 1) : rng.pick(-size - 1, size);
        if (huge_argument()) index = rng.chance(0.5) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
        log += fmt::format("select({}, {})\n", d, index);
        const size_t at = w ? static_cast<size_t>(*w) : 0;
        const std::optional<int64_t> offset =
            n > 0 && w ? exact(r.offset, index < 0 ? index + size : index, r.strides[at]) : std::nullopt;
        if (n > 0 && w && index >= -size && index < size && offset) {
          want = r;
          want->offset = *offset;
          want->shape.erase(want->shape.begin() + static_cast<std::ptrdiff_t>(at));
          want->strides.erase(want->strides.begin() + static_cast<std::ptrdiff_t>(at));
        }
        got = attempt(exists(want), [&] { return ts::select(s.t, d, index); });
        break;
      }
      default: {  // as_strided, anywhere in the storage
        const int64_t elems = static_cast<int64_t>(r.storage->size());
        const size_t k = static_cast<size_t>(rng.pick(0, 3));
        Shape shape(k), strides(k + (rng.chance(0.03) ? 1 : 0));
        for (int64_t& v : shape) v = rng.chance(0.03) ? -1 : rng.pick(0, 4);
        for (int64_t& v : strides) v = rng.chance(0.03) ? -1 : rng.pick(0, 6);
        int64_t offset = rng.chance(0.03) ? -1 : rng.pick(0, elems + 1);
        if (huge_argument() && !strides.empty()) strides[0] = std::numeric_limits<int64_t>::max() / rng.pick(1, 3);
        if (huge_argument()) offset = std::numeric_limits<int64_t>::max() - rng.pick(0, 2);
        log += fmt::format("as_strided([{}], [{}], {})\n", fmt::join(shape, ", "), fmt::join(strides, ", "), offset);
        bool ok = shape.size() == strides.size() && offset >= 0;
        bool empty = false;
        for (size_t i = 0; ok && i < shape.size(); ++i) {
          ok = shape[i] >= 0 && strides[i] >= 0;
          empty = empty || shape[i] == 0;
        }
        if (ok && !empty) {  // the last element reached must lie in the storage (exact: __int128)
          __int128 last = offset;
          for (size_t i = 0; i < shape.size(); ++i) last += static_cast<__int128>(shape[i] - 1) * strides[i];
          ok = last < elems;
        }
        if (ok) want = Ref{r.storage, shape, strides, offset};
        got = attempt(exists(want), [&] { return ts::as_strided(s.t, to_dims(shape), to_dims(strides), offset); });
        break;
      }
    }
    if (!got || !want) return false;
    if (shares_storage && got->storage() != s.t.storage()) fail_case("a view op copied the data");
    check_values(*got, *want);
    // The stride of a dim of size 0 or 1, and every stride of an empty tensor, addresses
    // nothing: any value is right, and ts keeps PyTorch's choice where the reference has
    // its own (0 after a brute-force view). The reference takes ts's, so that a later step
    // forms the offsets ts forms (slicing a size-1 dim past its end moves the offset by its
    // stride, which may then lie past what int64 bytes can address: both must refuse).
    if (!failed && to_shape(got->shape()) == want->shape)
      for (size_t d = 0; d < want->shape.size(); ++d)
        if (want->shape[d] <= 1 || want->numel() == 0) want->strides[d] = got->strides()[static_cast<int>(d)];
    s = State{*got, *want};
    return !failed;
  }

  // A tensor that broadcasts with `shape` (or, sometimes, does not).
  Shape broadcast_partner(const Shape& shape) {
    Shape out;
    const size_t keep = static_cast<size_t>(rng.pick(0, static_cast<int64_t>(shape.size())));
    for (size_t i = shape.size() - keep; i < shape.size(); ++i) out.push_back(rng.chance(0.3) ? 1 : shape[i]);
    if (rng.chance(0.2) && out.size() < 4) out.insert(out.begin(), rng.pick(1, 2));
    if (rng.chance(0.1) && !out.empty()) out[0] = rng.pick(0, 4);
    return out;
  }

  std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
    Shape out(std::max(a.size(), b.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
      if (x != y && x != 1 && y != 1) return std::nullopt;
      out[out.size() - 1 - i] = x == 1 ? y : x;
    }
    return out;
  }

  // One op on the chain's result, against the reference.
  void op_step(const State& s) {
    const Ref& r = s.r;
    const int n = r.dim();
    const std::vector<double> x = r.values();
    switch (rng.pick(0, 9)) {
      case 0:
      case 1: {  // sum / max over a dim
        const bool is_max = rng.chance(0.4);
        const int64_t d = rng.dim(n);
        const bool keepdim = rng.chance(0.5);
        log += fmt::format("{}(dim {}, keepdim {})\n", is_max ? "max" : "sum", d, keepdim);
        const auto w = wrap(d, n);
        const int64_t size = w && n > 0 ? r.shape[static_cast<size_t>(*w)] : 1;
        const bool possible = w.has_value() && !(is_max && size == 0);
        std::optional<Tensor> indices;
        const std::optional<Tensor> got = attempt(possible, [&] {
          if (!is_max) return ts::sum(s.t, d, keepdim);
          auto [values, where] = ts::max(s.t, d, keepdim);
          indices = where;
          return values;
        });
        if (!got) return;
        // Reference: outer x size x inner, reduced over the middle.
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < n; ++i) {
          if (i < *w) outer *= r.shape[static_cast<size_t>(i)];
          if (i > *w) inner *= r.shape[static_cast<size_t>(i)];
        }
        std::vector<double> want(static_cast<size_t>(outer * inner)), want_index(want.size());
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double acc = is_max ? -INFINITY : 0;
            int64_t best = 0;
            for (int64_t k = 0; k < size; ++k) {
              const double v = x[static_cast<size_t>((o * size + k) * inner + i)];
              if (is_max ? v > acc : true) {
                if (is_max) best = k;
                acc = is_max ? v : acc + v;
              }
            }
            want[static_cast<size_t>(o * inner + i)] = acc;
            want_index[static_cast<size_t>(o * inner + i)] = static_cast<double>(best);
          }
        Shape shape = r.shape;
        if (n > 0) {
          if (keepdim) shape[static_cast<size_t>(*w)] = 1;
          else shape.erase(shape.begin() + *w);
        }
        check_values(*got, dense(shape, want));
        if (indices) check_values(*indices, dense(shape, want_index));
        break;
      }
      case 2: {  // softmax
        const int64_t d = rng.dim(n);
        log += fmt::format("softmax(dim {})\n", d);
        const auto w = wrap(d, n);
        const std::optional<Tensor> got = attempt(w.has_value(), [&] { return ts::softmax(s.t, d); });
        if (!got) return;
        int64_t outer = 1, inner = 1;
        const int64_t size = n > 0 ? r.shape[static_cast<size_t>(*w)] : 1;
        for (int i = 0; i < n; ++i) {
          if (i < *w) outer *= r.shape[static_cast<size_t>(i)];
          if (i > *w) inner *= r.shape[static_cast<size_t>(i)];
        }
        std::vector<double> want(x.size());
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double m = -INFINITY, total = 0;
            for (int64_t k = 0; k < size; ++k) m = std::max(m, x[static_cast<size_t>((o * size + k) * inner + i)]);
            for (int64_t k = 0; k < size; ++k) total += std::exp(x[static_cast<size_t>((o * size + k) * inner + i)] - m);
            for (int64_t k = 0; k < size; ++k) {
              const size_t at = static_cast<size_t>((o * size + k) * inner + i);
              want[at] = std::exp(x[at] - m) / total;
            }
          }
        check_values(*got, dense(r.shape, want), 1e-6);
        break;
      }
      case 3:
      case 4: {  // add / sub / mul with a broadcast partner (or with itself)
        const int which = static_cast<int>(rng.pick(0, 2));
        const bool self = rng.chance(0.2);
        const Shape other_shape = self ? r.shape : broadcast_partner(r.shape);
        int64_t m = 1;
        for (int64_t v : other_shape) m *= v;
        std::vector<double> y_values(static_cast<size_t>(m));
        for (double& v : y_values) v = static_cast<double>(rng.pick(-9, 9));
        const Ref y = self ? r : dense(other_shape, y_values);
        const Tensor y_tensor =
            self ? s.t : ts::from_vector(std::vector<float>(y_values.begin(), y_values.end()), to_dims(other_shape));
        const double alpha = which == 2 ? 1 : static_cast<double>(rng.pick(-2, 2));
        log += fmt::format("{}(x, {}, alpha {})\n", which == 0 ? "add" : which == 1 ? "sub" : "mul",
                           self ? std::string("x") : fmt::format("y [{}]", fmt::join(other_shape, ", ")), alpha);
        const std::optional<Shape> out_shape = broadcast(r.shape, other_shape);
        const std::optional<Tensor> got = attempt(out_shape.has_value(), [&] {
          return which == 0 ? ts::add(s.t, y_tensor, alpha)
                 : which == 1 ? ts::sub(s.t, y_tensor, alpha)
                              : ts::mul(s.t, y_tensor);
        });
        if (!got) return;
        // Both operands broadcast to out_shape: read each through stride-0 dims.
        const auto spread = [&](const Ref& v) {
          Ref e{v.storage, *out_shape, Shape(out_shape->size(), 0), v.offset};
          const size_t lead = out_shape->size() - v.shape.size();
          for (size_t i = 0; i < v.shape.size(); ++i)
            e.strides[lead + i] = v.shape[i] == 1 ? 0 : v.strides[i];
          return e.values();
        };
        const std::vector<double> a = spread(r), b = spread(y);
        std::vector<double> want(a.size());
        for (size_t i = 0; i < a.size(); ++i)
          want[i] = which == 0 ? a[i] + alpha * b[i] : which == 1 ? a[i] - alpha * b[i] : a[i] * b[i];
        check_values(*got, dense(*out_shape, want));
        break;
      }
      case 5: {  // neg
        log += "neg\n";
        const std::optional<Tensor> got = attempt(true, [&] { return ts::neg(s.t); });
        std::vector<double> want(x.size());
        for (size_t i = 0; i < x.size(); ++i) want[i] = -x[i];
        if (got) check_values(*got, dense(r.shape, want));
        break;
      }
      case 6:
      case 7: {  // contiguous, clone
        const bool is_clone = rng.chance(0.5);
        log += is_clone ? "clone\n" : "contiguous\n";
        const std::optional<Tensor> got =
            attempt(true, [&] { return is_clone ? ts::clone(s.t) : ts::contiguous(s.t); });
        if (!got) return;
        check_values(*got, dense(r.shape, x));
        if (!got->is_contiguous()) fail_case("the result is not contiguous");
        if (is_clone && r.numel() > 0 && got->storage() == s.t.storage()) fail_case("clone shares the storage");
        break;
      }
      case 8: {  // mm(x, x^T), or mm(x, x)
        const bool square = rng.chance(0.3);
        log += square ? "mm(x, x)\n" : "mm(x, t(x)) when 2-D\n";
        if (!square && n != 2) {
          const std::optional<Tensor> got = attempt(false, [&] { return ts::mm(s.t, s.t); });
          (void)got;
          return;
        }
        const bool possible = n == 2 && (!square || r.shape[0] == r.shape[1]);
        const std::optional<Tensor> got =
            attempt(possible, [&] { return square ? ts::mm(s.t, s.t) : ts::mm(s.t, ts::t(s.t)); });
        if (!got) return;
        const int64_t M = r.shape[0], K = r.shape[1];
        std::vector<double> want(static_cast<size_t>(M * M));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < M; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc += x[static_cast<size_t>(i * K + k)] * (square ? x[static_cast<size_t>(k * K + j)] : x[static_cast<size_t>(j * K + k)]);
            want[static_cast<size_t>(i * M + j)] = acc;
          }
        check_values(*got, dense({M, M}, want));
        break;
      }
      default: {  // fill_ through the view: every storage element it reaches
        const std::vector<int64_t> at = r.positions();
        // PyTorch's rule (has_internal_overlap): a write through a view with a stride-0 dim of
        // size > 1 is refused; other overlaps (as_strided) are written, element by element.
        bool stride0 = false;
        for (int i = 0; i < n; ++i) stride0 = stride0 || (r.strides[static_cast<size_t>(i)] == 0 && r.shape[static_cast<size_t>(i)] > 1);
        if (r.numel() == 0) return;  // nothing to write; whether PyTorch refuses is not this test's question
        log += fmt::format("fill_(x, 7){}\n", stride0 ? " (x has a stride-0 dim)" : "");
        const bool overlapping = stride0;
        Tensor target = s.t;
        const std::optional<Tensor> got = attempt(!overlapping, [&] { return ts::fill_(target, 7.0); });
        if (!got) return;
        std::vector<double> want = *r.storage;
        for (int64_t p : at) want[static_cast<size_t>(p)] = 7;
        Ref whole = dense({static_cast<int64_t>(want.size())}, want);
        const Tensor storage_view = ts::as_strided(s.t, {static_cast<int64_t>(want.size())}, {1}, 0);
        check_values(storage_view, whole);
        break;
      }
    }
  }
};

void run_fuzz(uint64_t seed, uint64_t first, uint64_t count) {
  uint64_t failures = 0, steps = 0, throws = 0, ops = 0, compared = 0;
  for (uint64_t i = first; i < first + count; ++i) {
    Case c(seed, i);
    State s = c.base();
    const int64_t chain = c.rng.pick(1, 6);
    bool alive = true;
    for (int64_t k = 0; alive && k < chain && !c.failed; ++k) {
      alive = c.view_step(s);
      ++steps;
      throws += !alive && !c.failed;
    }
    if (alive && !c.failed) {
      ++ops;
      c.op_step(s);
    }
    failures += c.failed;
    compared += c.compared;
    if (failures >= 20) {
      FAIL("fuzz: stopping after 20 failing cases");
    }
  }
  MESSAGE(fmt::format("fuzz: seed {}, cases {}..{}: {} view steps ({} rejected, as the reference expected), {} ops "
                      "after a whole chain, {} elements compared; {} failing cases",
                      seed, first, first + count - 1, steps, throws, ops, compared, failures));
}

}  // namespace

TEST_CASE("fuzz: random view chains and ops against a scalar reference") {
  const uint64_t seed = env_u64("TS_FUZZ_SEED", 2024);
  const uint64_t count = env_u64("TS_FUZZ_CASES", 5000, 1);
  const uint64_t first = env_u64("TS_FUZZ_FIRST", 0);
  run_fuzz(seed, first, count);
}

TEST_CASE("fuzz: a case count of 0, or one that is not a whole number, fails instead of running nothing") {
  const char* name = "TS_FUZZ_TEST_COUNT";
  for (const char* bad : {"0", "abc", "12x", "-3", " 7", "18446744073709551616"}) {
    INFO(name, "=", bad);
    setenv(name, bad, 1);
    CHECK_THROWS_WITH_AS(env_u64(name, 5000, 1), doctest::Contains("expected a whole number of at least 1"),
                         std::invalid_argument);
  }
  setenv(name, "18446744073709551615", 1);
  CHECK(env_u64(name, 5000, 1) == UINT64_MAX);
  setenv(name, "", 1);
  CHECK(env_u64(name, 5000, 1) == 5000);  // empty: the default
  unsetenv(name);
  CHECK(env_u64(name, 5000, 1) == 5000);
  CHECK(env_u64("TS_FUZZ_TEST_UNSET_FIRST", 0) == 0);  // a first index may be 0
}
