// tests/test_cuda_fuzz.cpp: a seeded random fuzzer of the CUDA ops on strided inputs,
// each result against the CPU.
//
// Each case draws random inputs as views of a random storage: contiguous, permuted
// with gaps (transposed, stepped), broadcast (stride 0) or overlapping (small strides),
// with zero-size dims and, now and then, NaN, +-inf and values past f16's range. The
// same views are made over a copy of the storage on the device under test. One op runs
// on both: elementwise binary (tensor or scalar operand, broadcast, aliased) and unary
// ops, copy_ (device to device, host to device, device to host, converting dtypes),
// contiguous, clone, to, fill_, sum and max, softmax and _safe_softmax, masked_fill,
// masked_fill_, where, triu, tril, mm, bmm, addmm, matmul on small shapes, geglu, and
// the factories (rand, randn, arange, full). Half of the calls on the device prefer a
// random rung of the op (a VariantOverride in prefer mode), so the lower rungs run too.
//
// What must hold:
//   - the CPU and the device agree on whether the call is valid (both throw ts::Error,
//     or neither: the checks live in the front ends that both devices share);
//   - the device's result lies on the device, has the CPU's shape, and holds its
//     values: data movement (copies, fills, masking, max's values and indices, rand,
//     arange) bit for bit; arithmetic against the CPU op on the inputs widened to f32, its result
//     rounded to the dtype, element by element within tolerance_for(dtype) * max(1,
//     |want|) (inputs are O(1): quarter integers in [-3, 3]), NaN where the CPU has NaN,
//     the same infinities;
//   - an op in place writes exactly what the CPU writes, and nothing else of the storage.
//
// The same harness runs with the CPU standing in for the device (its rungs against
// the CPU's default ones and the f32 reference): that case runs everywhere, so the
// harness itself is tested on machines without a GPU.
//
// Every case is a function of (seed, case index); a failure names both and the command
// that replays it alone. Environment:
//   TS_CUDA_FUZZ_SEED    the seed (default 2024)
//   TS_CUDA_FUZZ_CASES   how many cases (default 3000 on the GPU, 600 for the CPU harness)
//   TS_CUDA_FUZZ_FIRST   the first case index (default 0)
// tools/gpu_check.sh runs it on the H200 (make gpu-check), as its cuda-fuzz step.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tensor/cuda_device.h"
#include "tests/support/case_rng.h"
#include "tests/support/compare.h"

using ts::Device;
using ts::Dims;
using ts::DType;
using ts::Tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kFloats[] = {DType::f32, DType::bf16, DType::f16};
constexpr DType kAll[] = {DType::f32, DType::bf16, DType::f16, DType::i64, DType::b8};

using ts::testing::env_u64;

// Every case has its own stream (tests/support/case_rng.h), plus the draws this fuzzer needs.
struct Rng : ts::testing::CaseRng {
  using CaseRng::CaseRng;
  template <typename T, size_t N>
  T one_of(const T (&items)[N]) {
    return items[static_cast<size_t>(pick(0, static_cast<int64_t>(N) - 1))];
  }
  // A multiple of 1/4 in [-limit, limit]: exact in every float dtype, and so are small sums of products.
  double quarter(int64_t limit = 3) { return static_cast<double>(pick(-4 * limit, 4 * limit)) / 4; }
  // A dim argument for `ndim` dims: mostly valid, sometimes just out of range.
  int64_t dim(int ndim) {
    const int64_t n = std::max(ndim, 1);
    if (chance(0.04)) return chance(0.5) ? n : -n - 1;
    return pick(-n, n - 1);
  }
};

// What the values of an input may be.
enum class Values {
  plain,     // quarter integers in [-3, 3]
  specials,  // the same, and now and then NaN, +-inf or 1e5 (past f16's range)
};

// The same view (shape, strides, offset) of the same values, on the CPU and on the device.
struct Both {
  Tensor cpu, dev;
};

// The whole storage under a view, as a 1-D tensor: what an op in place may have written.
Tensor whole_storage(const Tensor& x) {
  const int64_t n = static_cast<int64_t>(x.storage()->nbytes() / x.element_size());
  return ts::as_strided(x, {n}, {1}, 0);
}

// The device variants of the named ops, for a VariantOverride in prefer mode.
std::vector<const ts::Variant*> device_variants(std::initializer_list<std::string_view> ops, Device device) {
  std::vector<const ts::Variant*> out;
  for (std::string_view name : ops) {
    const ts::OpDef* op = ts::find_op(name);
    REQUIRE_MESSAGE(op != nullptr, "no op named ", std::string(name));
    for (const ts::Variant* v : ts::all_variants())
      if (v->op == op && v->device != ts::VariantDevice::any && v->runs_on(device.type)) out.push_back(v);
  }
  return out;
}

// Over a whole run: how often each preferred variant took a call.
struct Tally {
  std::map<std::string, int64_t> preferred_ran;  // variant -> calls it took
  std::map<std::string, int64_t> ops;            // op case -> cases compared
  int64_t rejected = 0;                          // cases both devices refused, as they should
  int64_t elements = 0;                          // elements compared
};

class Case {
 public:
  Case(Device device, uint64_t seed, uint64_t index, Tally& tally)
      : device_(device), seed_(seed), index_(index), rng_(seed, index), tally_(tally) {}

  bool failed() const { return failed_; }

  void run() {
    switch (rng_.pick(0, 13)) {
      case 0:
      case 1: binary(); break;
      case 2: unary(); break;
      case 3: softmax(); break;
      case 4: reduce(); break;
      case 5:
      case 6: copy(); break;
      case 7: fill(); break;
      case 8:
      case 9: masking(); break;
      case 10:
      case 11: matmul(); break;
      case 12: geglu(); break;
      default: factories(); break;
    }
  }

 private:
  Device device_;
  uint64_t seed_, index_;
  Rng rng_;
  Tally& tally_;
  std::string log_;  // what the case did, for the failure message
  bool failed_ = false;

  // ---- failures ------------------------------------------------------------------------------

  void fail_case(const std::string& why) {
    failed_ = true;
    FAIL_CHECK(fmt::format("cuda fuzz on {}: seed {} case {} (replay: TS_CUDA_FUZZ_SEED={} TS_CUDA_FUZZ_FIRST={} "
                           "TS_CUDA_FUZZ_CASES=1 ts_hardening_tests -tc='{}')\n{}  -> {}",
                           device_.str(), seed_, index_, seed_, index_,
                           device_.is_cpu() ? "cuda fuzz: the same*" : "cuda fuzz: random*", log_, why));
  }

  // ---- inputs ----------------------------------------------------------------------------------

  // A size: mostly small, sometimes 0, now and then a multiple of 8 (the packed kernels' rows).
  int64_t size() {
    if (rng_.chance(0.08)) return 0;
    if (rng_.chance(0.08)) return 8 * rng_.pick(1, 4);
    return rng_.pick(1, 6);
  }

  // 0 to max_dims dims, at most 4096 elements.
  Dims shape(int min_dims = 0, int max_dims = 4) {
    Dims s;
    const int64_t n = rng_.pick(min_dims, max_dims);
    int64_t numel = 1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = size();
      if (numel * std::max<int64_t>(v, 1) > 4096) v = 1;
      numel *= std::max<int64_t>(v, 1);
      s.push_back(v);
    }
    return s;
  }

  // A shape that broadcasts with `s` (or, one time in twenty, does not).
  Dims partner(const Dims& s) {
    Dims out;
    const int keep = static_cast<int>(rng_.pick(0, s.size()));
    for (int i = s.size() - keep; i < s.size(); ++i) out.push_back(rng_.chance(0.3) ? 1 : s[i]);
    if (rng_.chance(0.15) && out.size() < 4) out.insert(0, rng_.pick(1, 2));
    if (rng_.chance(0.05) && !out.empty()) out[0] = out[0] + rng_.pick(1, 2);
    return out;
  }

  // Strides for `shape` over a storage, and the storage's size. Writable views never
  // give two elements one address; read-only ones may (stride 0, small strides).
  struct Layout {
    Dims strides;
    int64_t offset = 0, storage = 0;
    std::string kind;
  };
  Layout layout(const Dims& shape, bool writable) {
    const int n = shape.size();
    Layout l;
    l.strides = Dims::filled(n, 0);
    const int64_t mode = rng_.pick(0, writable ? 1 : 3);
    if (mode == 3) {  // small strides: elements may share an address
      l.kind = "overlapping";
      for (int d = 0; d < n; ++d) l.strides[d] = rng_.pick(0, 3);
    } else {
      // Dims in a random order, innermost first, each stride past the extent of the
      // ones inside it (a gap of 0 to 2 elements, a step of 1 or 2 innermost).
      std::vector<int> order(static_cast<size_t>(n));
      for (int d = 0; d < n; ++d) order[static_cast<size_t>(d)] = d;
      const bool plain = mode == 0 && rng_.chance(0.6);
      if (!plain) std::shuffle(order.begin(), order.end(), rng_.engine);
      int64_t next = plain ? 1 : rng_.pick(1, 2);
      for (int i = n - 1; i >= 0; --i) {
        const int d = order[static_cast<size_t>(i)];
        l.strides[d] = next;
        next = next * std::max<int64_t>(shape[d], 1) + (plain ? 0 : rng_.pick(0, 2));
      }
      l.kind = plain ? "contiguous" : "permuted";
      if (mode == 2) {  // broadcast: some dims read one element
        l.kind = "broadcast";
        for (int d = 0; d < n; ++d)
          if (rng_.chance(0.4)) l.strides[d] = 0;
      }
    }
    l.offset = l.kind == "contiguous" && rng_.chance(0.5) ? 0 : rng_.pick(0, 3);
    bool empty = false;
    int64_t last = l.offset;
    for (int d = 0; d < n; ++d) {
      empty = empty || shape[d] == 0;
      last += (shape[d] - 1) * l.strides[d];
    }
    l.storage = (empty ? l.offset : last + 1) + rng_.pick(0, 3);
    return l;
  }

  double value(DType dtype, Values kind) {
    if (dtype == DType::b8) return static_cast<double>(rng_.pick(0, 1));
    if (dtype == DType::i64) return static_cast<double>(rng_.pick(-5, 5));
    if (kind == Values::specials && rng_.chance(0.02)) {
      const double specials[] = {kNaN, kInf, -kInf, 1e5, -1e5};
      return rng_.one_of(specials);
    }
    return rng_.quarter();
  }

  // A random view of `shape` and `dtype` on both devices, over equal storages.
  Both input(const char* name, const Dims& shape, DType dtype, Values kind = Values::specials, bool writable = false) {
    const Layout l = layout(shape, writable);
    std::vector<double> values(static_cast<size_t>(l.storage));
    for (double& v : values) v = value(dtype, kind);
    const Tensor cpu_storage = ts::from_vector(values, {l.storage}, {dtype});
    const Tensor dev_storage = device_.is_cpu() ? ts::clone(cpu_storage) : ts::to(cpu_storage, device_);
    log_ += fmt::format("  {} = {} {} view, shape {}, strides {}, offset {} (storage {})\n", name,
                        ts::dtype_short_name(dtype), l.kind, shape, l.strides, l.offset, l.storage);
    return {ts::as_strided(cpu_storage, shape, l.strides, l.offset),
            ts::as_strided(dev_storage, shape, l.strides, l.offset)};
  }

  // The CPU reference's input: the values widened to f32 (the device computes in f32 too).
  static Tensor widened(const Tensor& x) { return x.dtype() == DType::f32 ? x : ts::to(x, DType::f32); }

  // ---- running and comparing ---------------------------------------------------------------

  template <typename Fn>
  std::optional<Tensor> attempt(Fn&& fn, std::string& error) {
    try {
      return fn();
    } catch (const ts::Error& e) {
      error = e.what();
    } catch (const std::exception& e) {
      error = std::string("a non-ts::Error exception: ") + e.what();
    }
    return std::nullopt;
  }

  // Runs fn on the device, preferring (half of the time) a random rung of `ops` there.
  template <typename Fn>
  std::optional<Tensor> on_device(std::initializer_list<std::string_view> ops, Fn&& fn, std::string& error) {
    const std::vector<const ts::Variant*> rungs = device_variants(ops, device_);
    const ts::Variant* v = nullptr;
    if (!rungs.empty() && rng_.chance(0.5))
      v = rungs[static_cast<size_t>(rng_.pick(0, static_cast<int64_t>(rungs.size()) - 1))];
    std::optional<ts::VariantOverride> prefer;
    if (v != nullptr) {
      prefer.emplace(v->name, ts::VariantOverride::Mode::prefer);
      log_ += fmt::format("  (preferring {})\n", v->name);
    }
    std::optional<Tensor> out = attempt(fn, error);
    if (prefer && prefer->calls() > 0) tally_.preferred_ran[v->name] += prefer->calls();
    return out;
  }

  // Runs the reference on the CPU and the op on the device; false when the case ends
  // here (both refused, as they should, or they disagree: a failure).
  template <typename Ref, typename Dev>
  bool run_both(const char* op, std::initializer_list<std::string_view> ops, Ref&& ref, Dev&& dev,
                std::optional<Tensor>& want, std::optional<Tensor>& got) {
    log_ += fmt::format("  op: {}\n", op);
    std::string ref_error, dev_error;
    want = attempt(ref, ref_error);
    got = on_device(ops, dev, dev_error);
    if (!want && !got) {
      ++tally_.rejected;
      const auto other = [](const std::string& e) { return e.find("a non-ts::Error") != std::string::npos; };
      if (other(ref_error) || other(dev_error))
        fail_case(fmt::format("threw other than ts::Error: cpu: {} | device: {}", ref_error, dev_error));
      return false;
    }
    if (!want) fail_case(fmt::format("the CPU refused ({}) but the device returned shape {}", ref_error, got->shape()));
    if (!got) fail_case(fmt::format("the CPU returned shape {} but the device threw: {}", want->shape(), dev_error));
    if (!want || !got) return false;
    ++tally_.ops[op];
    return true;
  }

  // got (on the device) against want (on the CPU): the same shape and, element by element,
  // |got - want| <= tol * max(1, |want|), NaN for NaN, the same infinities. A reference
  // computed in f32 is first rounded to got's dtype, as the device rounds its f32 result
  // (-99999.75 is -inf in f16).
  void compare(const char* what, const Tensor& got, const Tensor& want_any, double tol) {
    if (got.device() != device_) {
      fail_case(fmt::format("{}: the result is on {}, not on {}", what, got.device().str(), device_.str()));
      return;
    }
    const Tensor want = want_any.dtype() == got.dtype() ? want_any : ts::to(want_any, got.dtype());
    if (got.shape() != want.shape()) {
      fail_case(fmt::format("{}: shape {} but the CPU gives {}", what, got.shape(), want.shape()));
      return;
    }
    const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
    tally_.elements += static_cast<int64_t>(w.size());
    int64_t bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const bool same = std::isnan(w[i])   ? std::isnan(g[i])
                        : std::isinf(w[i]) ? g[i] == w[i]
                                           : std::abs(g[i] - w[i]) <= tol * std::max(1.0, std::abs(w[i]));
      if (!same && bad++ == 0) first = i;
    }
    if (bad > 0)
      fail_case(fmt::format("{}: {} of {} elements differ (tolerance {:.0e} x max(1, |want|)); first at flat index "
                            "{}: device {} cpu {}; dtype {}, shape {}",
                            what, bad, w.size(), tol, first, g[first], w[first], ts::dtype_short_name(got.dtype()),
                            got.shape()));
  }

  static double tol(DType dtype) { return ts::testing::tolerance_for(dtype); }

  // ---- the ops ----------------------------------------------------------------------------

  void binary() {
    const DType dtype = rng_.one_of(kFloats);
    const Dims a_shape = shape();
    const Both a = input("a", a_shape, dtype);
    const int which = static_cast<int>(rng_.pick(0, 3));
    const char* names[] = {"add", "sub", "mul", "div"};
    const double alpha = which < 2 && rng_.chance(0.5) ? rng_.quarter(2) : 1;
    std::optional<Tensor> want, got;
    if (rng_.chance(0.25)) {  // a scalar operand
      const double s = value(dtype, Values::specials);
      log_ += fmt::format("  scalar {}\n", s);
      const auto f = [&](const Tensor& x) {
        return which == 0 ? ts::add(x, s) : which == 1 ? ts::sub(x, s) : which == 2 ? ts::mul(x, s) : ts::div(x, s);
      };
      if (!run_both(names[which], {names[which]}, [&] { return f(widened(a.cpu)); }, [&] { return f(a.dev); }, want,
                    got))
        return;
    } else {
      const bool self = rng_.chance(0.15);
      const Both b = self ? a : input("b", partner(a_shape), dtype);
      if (self) log_ += "  b = a (the same tensor)\n";
      if (alpha != 1) log_ += fmt::format("  alpha {}\n", alpha);
      const auto f = [&](const Tensor& x, const Tensor& y) {
        return which == 0   ? ts::add(x, y, alpha)
               : which == 1 ? ts::sub(x, y, alpha)
               : which == 2 ? ts::mul(x, y)
                            : ts::div(x, y);
      };
      if (!run_both(names[which], {names[which]}, [&] { return f(widened(a.cpu), widened(b.cpu)); },
                    [&] { return f(a.dev, b.dev); }, want, got))
        return;
    }
    compare(names[which], *got, *want, tol(dtype));
  }

  void unary() {
    const DType dtype = rng_.one_of(kFloats);
    const Both x = input("x", shape(), dtype);
    const int which = static_cast<int>(rng_.pick(0, 5));
    const char* names[] = {"neg", "exp", "tanh", "gelu", "gelu", "relu"};
    const auto f = [&](const Tensor& t) {
      switch (which) {
        case 0: return ts::neg(t);
        case 1: return ts::exp(t);
        case 2: return ts::tanh(t);
        case 3: return ts::gelu(t);
        case 4: return ts::gelu(t, ts::GeluApprox::tanh);
        default: return ts::relu(t);
      }
    };
    std::optional<Tensor> want, got;
    if (!run_both(which == 4 ? "gelu tanh" : names[which], {names[which]}, [&] { return f(widened(x.cpu)); },
                  [&] { return f(x.dev); }, want, got))
      return;
    compare(names[which], *got, *want, tol(dtype));
  }

  void softmax() {
    const DType dtype = rng_.one_of(kFloats);
    const Dims s = shape();
    const Both x = input("x", s, dtype);
    const int64_t dim = rng_.dim(s.size());
    const bool safe = rng_.chance(0.3);
    const auto f = [&](const Tensor& t) { return safe ? ts::_safe_softmax(t, dim) : ts::softmax(t, dim); };
    std::optional<Tensor> want, got;
    const char* name = safe ? "_safe_softmax" : "softmax";
    log_ += fmt::format("  dim {}\n", dim);
    if (!run_both(name, {name}, [&] { return f(widened(x.cpu)); }, [&] { return f(x.dev); }, want, got)) return;
    compare(name, *got, *want, tol(dtype));
  }

  void reduce() {
    const DType dtype = rng_.one_of(kFloats);
    const Dims s = shape();
    const Both x = input("x", s, dtype);
    const int64_t dim = rng_.dim(s.size());
    const bool keepdim = rng_.chance(0.5), is_max = rng_.chance(0.4);
    log_ += fmt::format("  dim {}, keepdim {}\n", dim, keepdim);
    std::optional<Tensor> want, got, want_index, got_index;
    const auto f = [&](const Tensor& t, std::optional<Tensor>& index) {
      if (!is_max) return ts::sum(t, dim, keepdim);
      auto [values, indices] = ts::max(t, dim, keepdim);
      index = indices;
      return values;
    };
    if (!run_both(is_max ? "max" : "sum", {is_max ? "max" : "sum"}, [&] { return f(widened(x.cpu), want_index); },
                  [&] { return f(x.dev, got_index); }, want, got))
      return;
    compare(is_max ? "max values" : "sum", *got, *want, is_max ? 0 : tol(dtype));
    if (is_max) compare("max indices (the first of equal values, the first NaN)", *got_index, *want_index, 0);
  }

  void copy() {
    const DType src_type = rng_.one_of(kAll), dst_type = rng_.chance(0.5) ? src_type : rng_.one_of(kAll);
    const int which = static_cast<int>(rng_.pick(0, 5));
    std::optional<Tensor> want, got;
    if (which >= 3) {  // contiguous, clone, to(dtype): a fresh tensor
      const Both x = input("x", shape(), src_type);
      const char* names[] = {"contiguous", "clone", "to"};
      const char* name = names[which - 3];
      if (which == 5) log_ += fmt::format("  to {}\n", ts::dtype_short_name(dst_type));
      const auto f = [&](const Tensor& t) {
        return which == 3 ? ts::contiguous(t) : which == 4 ? ts::clone(t) : ts::to(t, dst_type);
      };
      if (!run_both(name, {"copy_"}, [&] { return f(x.cpu); }, [&] { return f(x.dev); }, want, got)) return;
      compare(name, *got, *want, 0);
      return;
    }
    // copy_ into a writable view: device to device, host to device, or device to host.
    const Dims dst_shape = shape();
    const Both dst = input("dst", dst_shape, dst_type, Values::specials, /*writable=*/true);
    const Both src = input("src", partner(dst_shape), src_type);
    const char* names[] = {"copy_ on the device", "copy_ host to device", "copy_ device to host"};
    Tensor host_dst = ts::as_strided(ts::clone(whole_storage(dst.cpu)), dst.cpu.shape(), dst.cpu.strides(),
                                     dst.cpu.offset());
    Tensor ref_dst = dst.cpu, dev_dst = dst.dev;
    const auto dev = [&]() -> Tensor {
      if (which == 0) return ts::copy_(dev_dst, src.dev);
      if (which == 1) return ts::copy_(dev_dst, src.cpu);
      return ts::copy_(host_dst, src.dev);
    };
    if (!run_both(names[which], {"copy_"}, [&] { return ts::copy_(ref_dst, src.cpu); }, dev, want, got)) return;
    if (which == 2) {  // the result lives on the host: compare it there
      const std::vector<double> g = whole_storage(host_dst).to_vector<double>();
      const std::vector<double> w = whole_storage(ref_dst).to_vector<double>();
      tally_.elements += static_cast<int64_t>(w.size());
      for (size_t i = 0; i < w.size(); ++i)
        if (!(g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i])))) {
          fail_case(fmt::format("{}: storage element {} is {}, the CPU's copy_ wrote {}", names[which], i, g[i], w[i]));
          return;
        }
      return;
    }
    compare(names[which], whole_storage(dev_dst), whole_storage(ref_dst), 0);
  }

  void fill() {
    const DType dtype = rng_.one_of(kAll);
    const Both x = input("x", shape(), dtype, Values::specials, /*writable=*/true);
    const double past_int64[] = {kNaN, kInf, 1e19};
    const double v =
        dtype == DType::i64 && rng_.chance(0.2) ? rng_.one_of(past_int64) : value(DType::f32, Values::specials);
    log_ += fmt::format("  value {}\n", v);
    Tensor ref = x.cpu, dev = x.dev;
    std::optional<Tensor> want, got;
    if (!run_both("fill_", {"fill_"}, [&] { return ts::fill_(ref, v); }, [&] { return ts::fill_(dev, v); }, want, got))
      return;
    compare("fill_ (the whole storage)", whole_storage(dev), whole_storage(ref), 0);
  }

  void masking() {
    const int which = static_cast<int>(rng_.pick(0, 4));
    const DType dtype = rng_.chance(0.15) ? DType::i64 : rng_.one_of(kFloats);
    std::optional<Tensor> want, got;
    if (which <= 1) {  // masked_fill (out of place, may broadcast larger) and masked_fill_ (in place)
      const Dims s = shape();
      const Both x = input("x", s, dtype, Values::specials, /*writable=*/which == 1);
      const Both mask = input("mask", partner(s), DType::b8);
      const double v = dtype == DType::i64 && rng_.chance(0.2) ? kNaN
                       : rng_.chance(0.3)                       ? -kInf
                                                                : value(dtype, Values::specials);
      log_ += fmt::format("  value {}\n", v);
      if (which == 0) {
        if (!run_both("masked_fill", {"masked_fill_", "copy_"}, [&] { return ts::masked_fill(x.cpu, mask.cpu, v); },
                      [&] { return ts::masked_fill(x.dev, mask.dev, v); }, want, got))
          return;
        compare("masked_fill", *got, *want, 0);
      } else {
        Tensor ref = x.cpu, dev = x.dev;
        if (!run_both("masked_fill_", {"masked_fill_"}, [&] { return ts::masked_fill_(ref, mask.cpu, v); },
                      [&] { return ts::masked_fill_(dev, mask.dev, v); }, want, got))
          return;
        compare("masked_fill_ (the whole storage)", whole_storage(dev), whole_storage(ref), 0);
      }
    } else if (which == 2) {  // where
      const Dims s = shape();
      const Both cond = input("cond", partner(s), DType::b8);
      const Both a = input("a", s, dtype), b = input("b", partner(s), dtype);
      if (!run_both("where", {"where"}, [&] { return ts::where(cond.cpu, a.cpu, b.cpu); },
                    [&] { return ts::where(cond.dev, a.dev, b.dev); }, want, got))
        return;
      compare("where", *got, *want, 0);
    } else {  // triu, tril
      const Both x = input("x", shape(rng_.chance(0.9) ? 2 : 0), dtype);
      const bool upper = which == 3;
      const int64_t diagonal = rng_.chance(0.05) ? std::numeric_limits<int64_t>::min() + 1 : rng_.pick(-4, 4);
      log_ += fmt::format("  diagonal {}\n", diagonal);
      const auto f = [&](const Tensor& t) { return upper ? ts::triu(t, diagonal) : ts::tril(t, diagonal); };
      if (!run_both(upper ? "triu" : "tril", {upper ? "triu" : "tril"}, [&] { return f(x.cpu); },
                    [&] { return f(x.dev); }, want, got))
        return;
      compare(upper ? "triu" : "tril", *got, *want, 0);
    }
  }

  void matmul() {
    const DType dtype = rng_.one_of(kFloats);
    const auto n = [&] { return rng_.chance(0.08) ? 0 : rng_.chance(0.1) ? rng_.pick(10, 40) : rng_.pick(1, 9); };
    const int64_t M = n(), N = n(), K = n(), B = rng_.pick(0, 3);
    const int64_t Kb = rng_.chance(0.05) ? K + 1 : K;  // now and then a mismatch both devices must refuse
    const int which = static_cast<int>(rng_.pick(0, 3));
    std::optional<Tensor> want, got;
    // No NaN or inf here: an inf times a padded zero is a question of the kernel's tiling.
    if (which == 0) {
      const Both a = input("a", {M, K}, dtype, Values::plain), b = input("b", {Kb, N}, dtype, Values::plain);
      if (!run_both("mm", {"mm"}, [&] { return ts::mm(widened(a.cpu), widened(b.cpu)); },
                    [&] { return ts::mm(a.dev, b.dev); }, want, got))
        return;
      compare("mm", *got, *want, tol(dtype));
    } else if (which == 1) {
      const Both a = input("a", {B, M, K}, dtype, Values::plain), b = input("b", {B, Kb, N}, dtype, Values::plain);
      if (!run_both("bmm", {"bmm"}, [&] { return ts::bmm(widened(a.cpu), widened(b.cpu)); },
                    [&] { return ts::bmm(a.dev, b.dev); }, want, got))
        return;
      compare("bmm", *got, *want, tol(dtype));
    } else if (which == 2) {
      const Dims bias_shapes[] = {{N}, {M, N}, {1, N}, {M, 1}, {}};
      const Both c = input("c", rng_.one_of(bias_shapes), dtype, Values::plain);
      const Both a = input("a", {M, K}, dtype, Values::plain), b = input("b", {Kb, N}, dtype, Values::plain);
      const double beta = rng_.chance(0.5) ? 1 : rng_.quarter(2), alpha = rng_.chance(0.5) ? 1 : rng_.quarter(2);
      log_ += fmt::format("  beta {}, alpha {}\n", beta, alpha);
      const auto ref = [&] { return ts::addmm(widened(c.cpu), widened(a.cpu), widened(b.cpu), beta, alpha); };
      if (!run_both("addmm", {"addmm"}, ref, [&] { return ts::addmm(c.dev, a.dev, b.dev, beta, alpha); }, want, got))
        return;
      compare("addmm", *got, *want, tol(dtype));
    } else {  // matmul's rules: 1-D, 2-D and batched operands, batch dims broadcast
      const auto operand = [&](bool left) {
        const int64_t dims = rng_.pick(1, 4);
        if (dims == 1) return Dims{left ? K : Kb};
        Dims s = left ? Dims{M, K} : Dims{Kb, N};
        for (int64_t i = 2; i < dims; ++i) s.insert(0, rng_.chance(0.5) ? 1 : B);
        return s;
      };
      const Both a = input("a", operand(true), dtype, Values::plain);
      const Both b = input("b", operand(false), dtype, Values::plain);
      if (!run_both("matmul", {"mm", "bmm"}, [&] { return ts::matmul(widened(a.cpu), widened(b.cpu)); },
                    [&] { return ts::matmul(a.dev, b.dev); }, want, got))
        return;
      compare("matmul", *got, *want, tol(dtype));
    }
  }

  void geglu() {
    const DType dtype = rng_.one_of(kFloats);
    const Dims s = shape();
    const Both gate = input("gate", s, dtype), up = input("up", rng_.chance(0.05) ? partner(s) : s, dtype);
    std::optional<Tensor> want, got;
    if (!run_both("geglu", {"geglu"}, [&] { return ts::geglu(widened(gate.cpu), widened(up.cpu)); },
                  [&] { return ts::geglu(gate.dev, up.dev); }, want, got))
      return;
    compare("geglu", *got, *want, tol(dtype));
  }

  void factories() {
    const int which = static_cast<int>(rng_.pick(0, 3));
    const Dims s = shape();
    std::optional<Tensor> want, got;
    if (which <= 1) {  // rand, randn: the same seed gives the same values on every device
      const DType dtype = rng_.one_of(kFloats);
      const uint64_t seed = static_cast<uint64_t>(rng_.pick(0, 1 << 30));
      const char* name = which == 0 ? "rand" : "randn";
      log_ += fmt::format("  {}({}, {}) after manual_seed({})\n", name, s, ts::dtype_short_name(dtype), seed);
      const auto f = [&](Device d) {
        ts::manual_seed(seed);
        return which == 0 ? ts::rand(s, {dtype, d}) : ts::randn(s, {dtype, d});
      };
      if (!run_both(name, {name}, [&] { return f(ts::kCPU); }, [&] { return f(device_); }, want, got)) return;
      // rand: bit for bit; randn: the device's logf and cosf may differ from libm by an ulp,
      // which the rounding to bf16/f16 can turn into one ulp of the dtype.
      compare(name, *got, *want, which == 0 ? 0 : tol(dtype));
    } else if (which == 2) {  // arange on a grid of quarters (exact in double, however it is evaluated)
      const DType dtype = rng_.one_of(kAll);
      const double start = rng_.quarter(8), step = rng_.chance(0.05) ? 0 : rng_.quarter(2);
      const double end = start + step * static_cast<double>(rng_.pick(-2, 40));
      log_ += fmt::format("  arange({}, {}, {}, {})\n", start, end, step, ts::dtype_short_name(dtype));
      if (!run_both("arange", {"arange"}, [&] { return ts::arange(start, end, step, {dtype}); },
                    [&] { return ts::arange(start, end, step, {dtype, device_}); }, want, got))
        return;
      compare("arange", *got, *want, 0);
    } else {  // full: empty + fill_; a value int64 cannot hold is refused on both
      const DType dtype = rng_.one_of(kAll);
      const double v = dtype == DType::i64 && rng_.chance(0.3) ? kNaN : value(DType::f32, Values::specials);
      log_ += fmt::format("  full({}, {}, {})\n", s, v, ts::dtype_short_name(dtype));
      if (!run_both("full", {"fill_"}, [&] { return ts::full(s, v, {dtype}); },
                    [&] { return ts::full(s, v, {dtype, device_}); }, want, got))
        return;
      compare("full", *got, *want, 0);
    }
  }
};

// Runs `count` cases on `device`; reports what ran. Stops after 20 failing cases.
void run_fuzz(Device device, uint64_t default_count) {
  const uint64_t seed = env_u64("TS_CUDA_FUZZ_SEED", 2024);
  const uint64_t count = env_u64("TS_CUDA_FUZZ_CASES", default_count, 1);
  const uint64_t first = env_u64("TS_CUDA_FUZZ_FIRST", 0);
  // f32 GEMMs in full f32 (TF32 would be a documented 1e-3 error, not a bug to find here).
  const bool tf32 = ts::cuda::allow_tf32();
  ts::cuda::set_allow_tf32(false);
  Tally tally;
  uint64_t failures = 0;
  for (uint64_t i = first; i < first + count; ++i) {
    Case c(device, seed, i, tally);
    c.run();
    failures += c.failed();
    if (failures >= 20) {
      FAIL_CHECK("cuda fuzz: stopping after 20 failing cases");
      break;
    }
  }
  ts::cuda::set_allow_tf32(tf32);
  std::string per_op;
  for (const auto& [op, n] : tally.ops) per_op += fmt::format("{}{} {}", per_op.empty() ? "" : ", ", op, n);
  // Device rungs of the fuzzed ops that no preferred call reached (not a failure: a rung
  // may refuse every shape drawn here; the ladder tests cover it).
  std::string never;
  for (const ts::Variant* v : ts::all_variants()) {
    if (v->device == ts::VariantDevice::any || !v->runs_on(device.type)) continue;
    const std::string op = v->op->short_name();
    if (op == "scaled_dot_product_attention") continue;  // not fuzzed here
    if (!tally.preferred_ran.count(v->name)) never += fmt::format("{}{}", never.empty() ? "" : ", ", v->name);
  }
  MESSAGE(fmt::format("cuda fuzz: seed {}, cases {}..{} on {}: {} failing; {} compared ({} elements), {} refused by "
                      "both devices; preferred rungs that ran: {}; never reached: {}\n  per op: {}",
                      seed, first, first + count - 1, device.str(), failures, count - tally.rejected, tally.elements,
                      tally.rejected, tally.preferred_ran.size(), never.empty() ? "none" : never, per_op));
}

}  // namespace

TEST_CASE("cuda fuzz: random strided views through every CUDA op, against the CPU") {
  if (!ts::cuda::is_available()) {
    MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
    return;
  }
  run_fuzz(ts::kCUDA, 3000);
}

TEST_CASE("cuda fuzz: int64 fills on the GPU refuse NaN, inf and values past int64, as on the CPU") {
  if (!ts::cuda::is_available()) {
    MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
    return;
  }
  // The check lives in the front end (prepare), which both devices share: the GPU
  // kernels never see such a value, and the tensor is left as it was.
  const Device gpu = ts::kCUDA;
  Tensor x = ts::full({3}, 5, {DType::i64, gpu});
  const Tensor mask = ts::ones({3}, {DType::b8, gpu});
  for (const double v : {kNaN, kInf, -kInf, 1e19, -1e19}) {
    CAPTURE(v);
    CHECK_THROWS_WITH_AS(ts::fill_(x, v), doctest::Contains("fill_: value"), ts::Error);
    CHECK_THROWS_WITH_AS(ts::masked_fill_(x, mask, v), doctest::Contains("masked_fill_: value"), ts::Error);
    CHECK_THROWS_WITH_AS(ts::masked_fill(x, mask, v), doctest::Contains("masked_fill: value"), ts::Error);
    CHECK_THROWS_WITH_AS(ts::full({2}, v, {DType::i64, gpu}), doctest::Contains("full: value"), ts::Error);
  }
  CHECK(x.to_vector<int64_t>() == std::vector<int64_t>{5, 5, 5});
  // A tensor converted to int64 on the GPU gives INT64_MIN for them, as on the CPU.
  const Tensor f = ts::to(ts::tensor({kNaN, kInf, 2.5}), gpu);
  CHECK(ts::to(f, DType::i64).to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN, INT64_MIN, 2});
}

TEST_CASE("cuda fuzz: the same harness with the CPU standing in for the device (its rungs against the f32 reference)") {
  run_fuzz(ts::kCPU, 600);
}
