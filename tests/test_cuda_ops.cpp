// tests/test_cuda_ops.cpp: every CUDA variant in the registry against the float64 reference.
//
// The variants come from the registry (no hand-kept list): each test case
// walks ts::all_variants(), forces every cuda variant of its ops with a
// VariantOverride, and checks it over odd shapes (1, primes, one off a tile or
// warp size), non-contiguous inputs (transposed, stepped, expanded),
// broadcasts, in-place ops and f32/bf16/f16. Inputs are made on the CPU and
// copied over, so the reference (tests/support/reference.h, in double) sees
// exactly the values the kernel saw. A test case that finds a cuda variant
// with no checker fails: new variants cannot slip in untested.
//
// Without a GPU every case passes with a message saying why it did nothing. A rung the GPU lacks
// what it needs for (its rung row: mma.sync needs 8.0, wgmma 9.0 alone) is said and not run.
// TS_GPU_TEST_QUICK (tests/support/gpu_sweep.h): 1 runs every other case of each sweep, once each
// rung until it ran one case of each dtype (the sanitizer runs).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#if TS_HAVE_CUDA
#include "tensor/cuda_check.h"
#endif
#include "tensor/cuda_device.h"
#include "ops/matmul/matmul.h"
#include "ops/registry.h"
#include "tests/support/compare.h"
#include "tests/support/gpu_sweep.h"
#include "tests/support/reference.h"

using ts::Device;
using ts::DType;
using ts::Dims;
using ts::Tensor;
using ts::Variant;
using namespace ts::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const Device kGpu = ts::kCUDA;

bool no_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

bool quick() { return gpu_quick(); }

// The cuda variants of the registry for these ops; registers that the caller checks them.
std::set<std::string>& checked() {
  static std::set<std::string> names;
  return names;
}

std::vector<const Variant*> cuda_variants(std::initializer_list<const ts::OpDef*> ops) {
  std::vector<const Variant*> out;
  for (const Variant* v : ts::all_variants())
    for (const ts::OpDef* op : ops)
      if (v->op == op && v->device == ts::VariantDevice::cuda) {
        out.push_back(v);
        checked().insert(v->name);
      }
  return out;
}

// Prefers a variant for the scope (calls it cannot run go to the next rung:
// a case list spans layouts a faster rung refuses) and checks, at the end,
// that the variant itself ran at least one case. A variant whose GPU lacks what
// its rung row needs runs none, and is expected to: said once, with the reason.
struct PreferVariant {
  ts::VariantOverride use;
  std::string lacks;  // why this GPU cannot run the variant ("" when it can)
  explicit PreferVariant(const Variant& v) : use(v.name, ts::VariantOverride::Mode::prefer) {
    if (!ts::gpu_meets(v.needs, kGpu, &lacks)) MESSAGE(std::string(v.name), " not run on this GPU: ", lacks);
  }
  ~PreferVariant() {
    if (lacks.empty())
      CHECK_MESSAGE(use.calls() > 0, std::string(use.variant().name), " ran none of the cases");
    else
      CHECK_MESSAGE(use.calls() == 0, std::string(use.variant().name), " ran although its GPU lacks what it needs");
  }
  // Whether case i of the sweep runs (TS_GPU_TEST_QUICK): every case, every other one, or, in once
  // mode, until this variant has run one case of `dtype` (each dtype is a kernel of its own).
  bool wants(size_t i, DType dtype) {
    if (!lacks.empty()) return i == 0;  // one case is enough to see the rung refused
    switch (gpu_sweep()) {
      case Sweep::full: return true;
      case Sweep::half: return i % 2 == 0;
      case Sweep::once:
        if (dtype != once_dtype_) {
          once_dtype_ = dtype;
          once_from_ = use.calls();
        }
        return use.calls() == once_from_;
    }
    return true;
  }

 private:
  DType once_dtype_ = DType::b8;  // no sweep here is of bools
  int64_t once_from_ = -1;
};

// The same values and the same memory layout on the CPU and on the GPU.
struct Pair {
  Tensor cpu, gpu;
};

// Standard normal values (times scale) of `shape` in `dtype`, laid out as
// tests/support/reference.h's make_input does, on both devices. `edit` may
// change the CPU base (plant -inf or NaN) before it is copied over.
Pair make_both(const Dims& shape, DType dtype, uint64_t seed, Layout layout = Layout::contiguous, double scale = 1,
               const std::function<void(Tensor&)>& edit = nullptr) {
  ts::manual_seed(seed);
  const int n = shape.size();
  Dims base_shape = shape;
  if (layout == Layout::transposed && n >= 2) {
    std::swap(base_shape[n - 1], base_shape[n - 2]);
  } else if (layout == Layout::stepped && n >= 1) {
    base_shape[n - 1] = 2 * shape[n - 1] + 1;
  } else if (layout == Layout::expanded && n >= 1 && shape[0] > 1) {
    base_shape[0] = 1;
  } else {
    layout = Layout::contiguous;
  }
  Tensor base = ts::randn(base_shape, dtype);
  if (scale != 1) base = ts::mul(base, scale);
  if (edit) edit(base);
  const Tensor gbase = base.to(kGpu);
  auto lay = [&](const Tensor& b) {
    switch (layout) {
      case Layout::transposed: return b.transpose(-1, -2);
      case Layout::stepped: return b.slice(-1, 1, base_shape[n - 1], 2);
      case Layout::expanded: return b.expand(shape);
      default: return b;
    }
  };
  Pair p{lay(base), lay(gbase)};
  REQUIRE(p.cpu.shape() == shape);
  REQUIRE(p.gpu.shape() == shape);
  REQUIRE(p.gpu.device() == kGpu);
  return p;
}

// A bool mask of `shape` (about half true) on both devices.
Pair make_mask(const Dims& shape, uint64_t seed) {
  std::vector<int> bits(static_cast<size_t>(ts::numel_of(shape)));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int& b : bits) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<int>(x >> 63);
  }
  const Tensor cpu = ts::from_vector(bits, shape, {DType::b8});
  return {cpu, cpu.to(kGpu)};
}

// Values of a tensor converted to dtype on the CPU (what the GPU should store).
Ref rounded(const Ref& r, DType dtype) {
  const Tensor t = ts::from_vector(r.v, r.shape, {dtype});
  return {r.shape, t.to_vector<double>()};
}

std::string describe(const Variant& v, DType dtype, const Dims& shape, const char* what = "") {
  return fmt::format("{} {} {} {}", v.name, ts::dtype_short_name(dtype), shape, what);
}

// doctest prints std::string; these keep INFO lines readable.
std::string str(const Dims& d) { return fmt::format("{}", d); }
std::string str(const char* s) { return s; }
std::string str(DType d) { return ts::dtype_short_name(d); }
std::string str(Layout l) { return layout_name(l); }

#define CHECK_GPU(got, ref, dtype, seed) CHECK_CLOSE(got, (ref).v, tolerance_for(dtype), seed)

// The wgmma rung runs each case under both schedules of its consumers; every other rung once.
std::vector<ts::WgmmaSchedule> schedules_for(std::string_view variant) {
  if (variant.find("/wgmma") == std::string_view::npos) return {ts::WgmmaSchedule::automatic};
  return {ts::WgmmaSchedule::cooperative, ts::WgmmaSchedule::pingpong};
}

}  // namespace

// ---- elementwise ---------------------------------------------------------------------------

TEST_CASE("cuda: every variant: elementwise binary ops over shapes, layouts and broadcasts") {
  if (no_gpu()) return;
  struct Shapes {
    Dims a, b;
  };
  const std::vector<Shapes> shapes = {{{1}, {1}},         {{7}, {7}},          {{257}, {257}},
                                      {{33, 65}, {33, 65}}, {{3, 5, 17}, {3, 5, 17}}, {{9003}, {9003}},
                                      {{31, 17}, {17}},   {{31, 17}, {31, 1}}, {{31, 1}, {1, 17}},
                                      {{4, 1, 17}, {5, 1}}, {{31, 17}, {}},
                                      // bias-style rows (lengths a multiple of 8): the packed rows kernel
                                      {{24, 64}, {64}},   {{3, 40}, {2, 3, 40}}, {{5, 16}, {1, 16}}};
  for (const Variant* v : cuda_variants({&ts::ops::add, &ts::ops::sub, &ts::ops::mul, &ts::ops::div})) {
    PreferVariant use(*v);
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 100;
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        for (Layout la : kLayouts) {
          const Layout lb = la == Layout::transposed ? Layout::stepped : Layout::contiguous;
          ++seed;
          INFO(describe(*v, dtype, shapes[i].a), " layout ", str(la), " with b ", str(shapes[i].b));
          const Pair a = make_both(shapes[i].a, dtype, seed, la);
          // Divisors exp(randn) stay in [e^-5, e^5]: no quotient overflows f16 (the reference is finite).
          const Pair b = make_both(shapes[i].b, dtype, seed + 1000, lb, 1, [&](Tensor& t) {
            if (v->op == &ts::ops::div) t = ts::exp(t);
          });
          const Ref ra = ref_of(a.cpu), rb = ref_of(b.cpu);
          Tensor got;
          Ref want;
          if (v->op == &ts::ops::add) {
            got = ts::add(a.gpu, b.gpu, 0.5);
            want = ref_binary(ra, rb, [](double x, double y) { return x + 0.5 * y; });
          } else if (v->op == &ts::ops::sub) {
            got = ts::sub(a.gpu, b.gpu);
            want = ref_binary(ra, rb, [](double x, double y) { return x - y; });
          } else if (v->op == &ts::ops::mul) {
            got = ts::mul(a.gpu, b.gpu);
            want = ref_binary(ra, rb, [](double x, double y) { return x * y; });
          } else {
            got = ts::div(a.gpu, b.gpu);
            want = ref_binary(ra, rb, [](double x, double y) { return x / y; });
          }
          CHECK(got.device() == kGpu);
          CHECK(got.shape() == want.shape);
          CHECK_GPU(got, want, dtype, seed);
        }
        // The scalar form: one tensor operand.
        const Pair a = make_both(shapes[i].a, dtype, ++seed, Layout::transposed);
        const Ref ra = ref_of(a.cpu);
        INFO(describe(*v, dtype, shapes[i].a, "scalar operand"));
        if (v->op == &ts::ops::add) {
          CHECK_GPU(ts::add(a.gpu, 2.5), ref_unary(ra, [](double x) { return x + 2.5; }), dtype, seed);
        } else if (v->op == &ts::ops::sub) {
          CHECK_GPU(ts::sub(a.gpu, 2.5), ref_unary(ra, [](double x) { return x - 2.5; }), dtype, seed);
        } else if (v->op == &ts::ops::mul) {
          CHECK_GPU(ts::mul(a.gpu, -3.0), ref_unary(ra, [](double x) { return x * -3.0; }), dtype, seed);
        } else {
          CHECK_GPU(ts::div(a.gpu, 4.0), ref_unary(ra, [](double x) { return x / 4.0; }), dtype, seed);
        }
      }
    }
  }
}

TEST_CASE("cuda: every variant: elementwise unary ops over shapes and layouts") {
  if (no_gpu()) return;
  const std::vector<Dims> shapes = {{1}, {7}, {257}, {33, 65}, {3, 5, 17}, {9003}, {}};
  for (const Variant* v :
       cuda_variants({&ts::ops::neg, &ts::ops::exp, &ts::ops::tanh, &ts::ops::gelu, &ts::ops::relu})) {
    PreferVariant use(*v);
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 200;
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        for (Layout layout : kLayouts) {
          ++seed;
          INFO(describe(*v, dtype, shapes[i]), " layout ", str(layout));
          const Pair x = make_both(shapes[i], dtype, seed, layout, 2.0);
          const Ref rx = ref_of(x.cpu);
          // The exact result rounded once to dtype: the best any kernel can store. (Unrounded,
          // a one-element f16 gelu(-4) lands among f16 subnormals, and rounding alone is 0.5%.)
          auto want = [&](double (*f)(double)) { return rounded(ref_unary(rx, f), dtype); };
          if (v->op == &ts::ops::neg) {
            CHECK_GPU(ts::neg(x.gpu), want([](double e) { return -e; }), dtype, seed);
          } else if (v->op == &ts::ops::exp) {
            CHECK_GPU(ts::exp(x.gpu), want([](double e) { return std::exp(e); }), dtype, seed);
          } else if (v->op == &ts::ops::tanh) {
            CHECK_GPU(ts::tanh(x.gpu), want([](double e) { return std::tanh(e); }), dtype, seed);
          } else if (v->op == &ts::ops::relu) {
            CHECK_GPU(ts::relu(x.gpu), want([](double e) { return e > 0 ? e : 0.0; }), dtype, seed);
          } else {
            CHECK_GPU(ts::gelu(x.gpu), want([](double e) { return 0.5 * e * (1 + std::erf(e / std::sqrt(2.0))); }),
                      dtype, seed);
            CHECK_GPU(ts::gelu(x.gpu, ts::GeluApprox::tanh), want([](double e) {
                        const double c = std::sqrt(2.0 / std::numbers::pi);
                        return 0.5 * e * (1 + std::tanh(c * (e + 0.044715 * e * e * e)));
                      }),
                      dtype, seed);
          }
        }
      }
    }
  }
}

// ---- softmax, masking, selection ---------------------------------------------------------------

TEST_CASE("cuda: every variant: softmax and _safe_softmax, warp and block rows, -inf rows") {
  if (no_gpu()) return;
  struct Case {
    Dims shape;
    int64_t dim;
  };
  // Rows of 1, 7, 32, 33 (a warp and one past), 1024 and 1025 (the warp kernel's limit and one past).
  const std::vector<Case> cases = {{{7}, 0},        {{1, 1}, -1},       {{5, 33}, -1},    {{5, 33}, 0},
                                   {{3, 1025}, -1}, {{2, 3, 31}, 1},    {{4, 32}, -1},    {{2, 1024}, -1},
                                   {{2, 3, 31}, 0}, {{1100, 3}, 0}};
  for (const Variant* v : cuda_variants({&ts::ops::softmax, &ts::ops::_safe_softmax})) {
    PreferVariant use(*v);
    const bool safe = v->op == &ts::ops::_safe_softmax;
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 300;
      for (size_t i = 0; i < cases.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::stepped}) {
          ++seed;
          INFO(describe(*v, dtype, cases[i].shape), " dim ", cases[i].dim, " layout ", str(layout));
          const Pair x = make_both(cases[i].shape, dtype, seed, layout, 3.0);
          const int d = ts::wrap_dim(cases[i].dim, x.cpu.dim(), "test");
          const Tensor got = safe ? ts::_safe_softmax(x.gpu, cases[i].dim) : ts::softmax(x.gpu, cases[i].dim);
          CHECK_GPU(got, ref_softmax(ref_of(x.cpu), d, safe), dtype, seed);
        }
      }
      // A row that is entirely -inf: NaN from softmax, 0 from _safe_softmax, on both paths.
      for (const Dims& shape : {Dims{4, 37}, Dims{4, 40}, Dims{3, 1100}}) {
        INFO(describe(*v, dtype, shape, "row 1 all -inf"));
        const Pair x = make_both(shape, dtype, ++seed, Layout::contiguous, 1,
                                 [](Tensor& t) {
                                   Tensor row = t.select(0, 1);
                                   ts::fill_(row, -kInf);
                                 });
        const Tensor got = safe ? ts::_safe_softmax(x.gpu, -1) : ts::softmax(x.gpu, -1);
        CHECK_GPU(got, ref_softmax(ref_of(x.cpu), 1, safe), dtype, seed);
      }
    }
  }
}

TEST_CASE("cuda: every variant: masked_fill_ in place, where, triu, tril") {
  if (no_gpu()) return;
  const std::vector<Dims> shapes = {{1, 1}, {7, 13}, {33, 31}, {2, 17, 17}, {3, 1, 64}};
  for (const Variant* v : cuda_variants({&ts::ops::masked_fill_, &ts::ops::where, &ts::ops::triu, &ts::ops::tril})) {
    PreferVariant use(*v);
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 400;
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        const Dims& shape = shapes[i];
        const int nd = shape.size();
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::stepped}) {
          ++seed;
          INFO(describe(*v, dtype, shape), " layout ", str(layout));
          Pair x = make_both(shape, dtype, seed, layout);
          const Ref rx = ref_of(x.cpu);
          if (v->op == &ts::ops::masked_fill_) {
            Dims row = shape, col = shape;  // the mask as a full tensor, a broadcast row and a broadcast column
            row[nd - 2] = 1;
            col[nd - 1] = 1;
            for (const Dims& mshape : {shape, row, col}) {
              for (double value : {3.5, -kInf}) {
                Pair y = make_both(shape, dtype, seed, layout);
                const Pair m = make_mask(mshape, seed);
                const Ref rm = ref_of(m.cpu);
                Tensor& same = ts::masked_fill_(y.gpu, m.gpu, value);
                CHECK(same.data_ptr() == y.gpu.data_ptr());  // in place: the very tensor
                Ref want = rounded(ref_binary(rx, rm, [value](double e, double keep) { return keep != 0 ? value : e; }),
                                   dtype);
                CHECK_GPU(y.gpu, want, dtype, seed);
              }
            }
            if (i == 0 && layout == Layout::contiguous) {  // attention's case: one [S, L] mask under [B, H, S, L]
              Pair scores = make_both({2, 3, 16, 24}, dtype, seed + 7);
              const Pair m = make_mask({16, 24}, seed + 7);
              const Ref want = rounded(ref_binary(ref_of(scores.cpu), ref_of(m.cpu),
                                                  [](double e, double keep) { return keep != 0 ? -kInf : e; }),
                                       dtype);
              ts::masked_fill_(scores.gpu, m.gpu, -kInf);
              CHECK_GPU(scores.gpu, want, dtype, seed + 7);
            }
          } else if (v->op == &ts::ops::where) {
            Dims row = shape;
            row[nd - 2] = 1;
            const Pair cond = make_mask(row, seed);
            const Pair b = make_both(row, dtype, seed + 1);
            const Ref rc = ref_of(cond.cpu), rb = ref_of(b.cpu);
            Ref want = ref_binary(ref_binary(rc, rx, [](double c, double a) { return c != 0 ? a : NAN; }), rb,
                                  [](double ca, double bv) { return std::isnan(ca) ? bv : ca; });
            CHECK_GPU(ts::where(cond.gpu, x.gpu, b.gpu), want, dtype, seed);
            // b as a 0-d -inf, as the attention math path uses it
            const Tensor minus_inf = ts::full({}, -kInf, {dtype, kGpu});
            Ref want_inf = ref_binary(rc, rx, [](double c, double a) { return c != 0 ? a : -kInf; });
            CHECK_GPU(ts::where(cond.gpu, x.gpu, minus_inf), want_inf, dtype, seed);
          } else {
            const bool upper = v->op == &ts::ops::triu;
            for (int64_t diagonal : {-1, 0, 2}) {
              INFO("diagonal ", diagonal);
              Ref want{rx.shape, rx.v};
              for (size_t k = 0; k < want.v.size(); ++k) {
                const Dims idx = unravel(static_cast<int64_t>(k), shape);
                const int64_t j_minus_i = idx[nd - 1] - idx[nd - 2];
                if (upper ? j_minus_i < diagonal : j_minus_i > diagonal) want.v[k] = 0;
              }
              CHECK_GPU(upper ? ts::triu(x.gpu, diagonal) : ts::tril(x.gpu, diagonal), want, dtype, seed);
            }
          }
        }
      }
    }
    if (v->op == &ts::ops::triu || v->op == &ts::ops::tril) {  // bool masks, as causal attention builds them
      const Tensor ones = ts::ones({5, 7}, {DType::b8, kGpu});
      const Tensor got = v->op == &ts::ops::triu ? ts::triu(ones, 1) : ts::tril(ones, 0);
      std::vector<double> want;
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 7; ++j) want.push_back(v->op == &ts::ops::triu ? (j - i >= 1) : (j - i <= 0));
      CHECK_CLOSE(got, want, 0.0, 0);
    }
  }
}

// ---- reductions ---------------------------------------------------------------------------------

TEST_CASE("cuda: every variant: sum and max over each dim, keepdim, NaN rows and ties") {
  if (no_gpu()) return;
  const std::vector<Dims> shapes = {{7}, {5, 33}, {3, 1025}, {2, 3, 31}, {1, 1}, {64, 5}};
  for (const Variant* v : cuda_variants({&ts::ops::sum, &ts::ops::max})) {
    PreferVariant use(*v);
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 500;
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        for (Layout layout : kLayouts) {
          for (int d = 0; d < shapes[i].size(); ++d) {
            for (bool keepdim : {false, true}) {
              ++seed;
              INFO(describe(*v, dtype, shapes[i]), " dim ", d, " keepdim ", keepdim, " layout ", str(layout));
              const bool plant_nan = v->op == &ts::ops::max && seed % 3 == 0;
              const Pair x = make_both(shapes[i], dtype, seed, layout, 1, [&](Tensor& t) {
                if (!plant_nan) return;
                Tensor slice = t.select(t.dim() - 1, 0);  // NaNs along the last dim's first slice
                ts::fill_(slice, NAN);
              });
              const Ref rx = ref_of(x.cpu);
              if (v->op == &ts::ops::sum) {
                CHECK_GPU(ts::sum(x.gpu, d, keepdim), ref_sum(rx, d, keepdim), dtype, seed);
              } else {
                const auto [values, indices] = ts::max(x.gpu, d, keepdim);
                const auto [want_values, want_indices] = ref_max(rx, d, keepdim);
                CHECK_GPU(values, want_values, dtype, seed);
                CHECK(indices.dtype() == DType::i64);
                CHECK(indices.to_vector<int64_t>() == want_indices);
              }
            }
          }
        }
      }
      if (v->op == &ts::ops::max) {  // many ties: the first index must win
        std::vector<double> vals;
        for (int k = 0; k < 6 * 70; ++k) vals.push_back(static_cast<double>(k % 5));
        const Tensor cpu = ts::from_vector(vals, {6, 70}, {dtype});
        const auto [values, indices] = ts::max(cpu.to(kGpu), 1);
        const auto [want_values, want_indices] = ref_max(ref_of(cpu), 1, false);
        CHECK_GPU(values, want_values, dtype, 0);
        CHECK(indices.to_vector<int64_t>() == want_indices);
      }
    }
  }
}

// ---- numerics at scale --------------------------------------------------------------------------
// The CPU's edge cases at 2^25 (tests/test_ops_edge_cases.cpp) on every CUDA rung of sum and
// softmax: one thread's plain f32 running sum stops growing at 2^24 ones and reads 2^19 additions
// of 0.1f 0.4% high, so each case reads wrong where a rung keeps such a sum. PyTorch's answers on
// the H200: docs/pytorch-reference/numerics_at_scale.out.txt.

TEST_CASE("cuda: every variant: sum and softmax over 2^25 elements, where an f32 running sum stops at 2^24") {
  if (no_gpu()) return;
  if (gpu_sweep() == Sweep::once) {  // one warp walks 2^25 elements: seconds, and minutes under a sanitizer
    MESSAGE("skipped under TS_GPU_TEST_QUICK=once: the sweeps above launch these kernels on small shapes");
    return;
  }
  const int64_t n = int64_t{1} << 25;
  const ts::Options f32_gpu{DType::f32, kGpu};
  for (const Variant* v : cuda_variants({&ts::ops::sum})) {
    PreferVariant use(*v);
    if (!use.wants(0, DType::f32)) continue;
    INFO(std::string(v->name));
    CHECK(ts::sum(ts::ones({n}, f32_gpu), 0).item<float>() == 33554432.0f);
    // 0.1f, 2^24 times: the float64 sum, rounded once to f32, to f32's rounding.
    const double tenth_sum = static_cast<double>(0.1f) * static_cast<double>(n / 2);
    CHECK(ts::sum(ts::full({n / 2}, 0.1, f32_gpu), 0).item<float>() == doctest::Approx(tenth_sum).epsilon(1e-6));
    // Rows of 2^24 + 2 ones along the inner dim, and normal values against the float64 sum.
    const int64_t row = (int64_t{1} << 24) + 2;
    CHECK(ts::sum(ts::ones({2, row}, f32_gpu), 1).to_vector<float>() == std::vector<float>{16777218.0f, 16777218.0f});
    const Pair x = make_both({n}, DType::f32, 2501);
    CHECK_GPU(ts::sum(x.gpu, 0), ref_sum(ref_of(x.cpu), 0, false), DType::f32, 2501);
  }
  // The warp rungs take rows of up to 1024 elements, so a row of 2^25 goes to the next rung: each
  // variant is preferred in turn, and the block rung must have run.
  const ts::OpDef* ops[] = {&ts::ops::softmax, &ts::ops::_safe_softmax};
  for (const ts::OpDef* op : ops) {
    const bool safe = op == &ts::ops::_safe_softmax;
    auto softmax = [&](const Tensor& x) { return safe ? ts::_safe_softmax(x, 1) : ts::softmax(x, 1); };
    int64_t rows_of_2_25 = 0;
    for (const Variant* v : cuda_variants({op})) {
      ts::VariantOverride use(v->name, ts::VariantOverride::Mode::prefer);
      std::string lacks;
      if (!ts::gpu_meets(v->needs, kGpu, &lacks)) continue;
      INFO(std::string(v->name));
      const std::vector<float> y = softmax(ts::zeros({1, n}, f32_gpu)).to_vector<float>();
      REQUIRE(static_cast<int64_t>(y.size()) == n);
      double total = 0;
      for (const float e : y) total += e;
      CHECK(y.front() == std::ldexp(1.0f, -25));
      CHECK(y.back() == std::ldexp(1.0f, -25));
      CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
      const Pair x = make_both({1, n}, DType::f32, 2502);
      CHECK_GPU(softmax(x.gpu), ref_softmax(ref_of(x.cpu), 1, safe), DType::f32, 2502);
      rows_of_2_25 += use.calls();
    }
    CHECK_MESSAGE(rows_of_2_25 > 0, std::string(op->name), ": no cuda rung ran a row of 2^25");
  }
}

// ---- factories and copies --------------------------------------------------------------------------

TEST_CASE("cuda: every variant: fill_, arange, rand, randn (same seed, same values as the CPU)") {
  if (no_gpu()) return;
  for (const Variant* v : cuda_variants({&ts::ops::fill_, &ts::ops::arange, &ts::ops::rand, &ts::ops::randn})) {
    PreferVariant use(*v);
    INFO(str(v->name));
    for (DType dtype : {DType::f32, DType::bf16, DType::f16, DType::b8, DType::i64}) {
      INFO(str(dtype));
      const bool floating = ts::is_floating(dtype);
      if (v->op == &ts::ops::fill_) {
        for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::stepped}) {
          INFO(str(layout));
          Pair x = floating ? make_both({33, 17}, dtype, 600, layout) : Pair{};
          if (!floating) {
            x.cpu = ts::zeros({33, 17}, {dtype});
            x.gpu = ts::zeros({33, 17}, {dtype, kGpu});
          }
          ts::fill_(x.gpu, 2.25);
          ts::fill_(x.cpu, 2.25);  // the CPU's rounding of the value is the reference
          CHECK_CLOSE(x.gpu, ref_of(x.cpu).v, 0.0, 600);
        }
      } else if (v->op == &ts::ops::arange) {
        // Integer bounds (int64 arithmetic) and floating ones (double), bit for bit against the CPU.
        CHECK_CLOSE(ts::arange(0, 1000, 1, {dtype, kGpu}), ref_of(ts::arange(0, 1000, 1, {dtype})).v, 0.0, 0);
        CHECK_CLOSE(ts::arange(-999, 1000, 7, {dtype, kGpu}), ref_of(ts::arange(-999, 1000, 7, {dtype})).v, 0.0, 0);
        CHECK_CLOSE(ts::arange(0.0, 1000.0, 1.0, {dtype, kGpu}), ref_of(ts::arange(0.0, 1000.0, 1.0, {dtype})).v, 0.0,
                    0);
        CHECK_CLOSE(ts::arange(-3.5, 7, 0.75, {dtype, kGpu}), ref_of(ts::arange(-3.5, 7, 0.75, {dtype})).v, 0.0, 0);
        if (dtype == DType::i64) {  // exact past 2^53 and across int64 on the device too
          // PyTorch on the H200 (docs/pytorch-reference/numerics_at_scale.out.txt): arange(2^53, 2^53 + 5)
          // and arange(2^62, 2^62 + 9, 3) on cuda, every value exact.
          const int64_t top = int64_t{1} << 53;
          CHECK(ts::arange(top, top + 5, int64_t{1}, {dtype, kGpu}).to_vector<int64_t>() ==
                std::vector<int64_t>{9007199254740992, 9007199254740993, 9007199254740994, 9007199254740995,
                                     9007199254740996});
          CHECK(ts::arange(int64_t{1} << 62, (int64_t{1} << 62) + 9, int64_t{3}, {dtype, kGpu}).to_vector<int64_t>() ==
                std::vector<int64_t>{4611686018427387904, 4611686018427387907, 4611686018427387910});
          CHECK(ts::arange(INT64_MAX, INT64_MIN, -(int64_t{1} << 62), {dtype, kGpu}).to_vector<int64_t>() ==
                std::vector<int64_t>{INT64_MAX, (int64_t{1} << 62) - 1, -1, -(int64_t{1} << 62) - 1});
        }
      } else if (floating) {
        for (const Dims& shape : {Dims{1}, Dims{7, 13}, Dims{100003}}) {
          INFO(str(shape));
          ts::manual_seed(42);
          ts::rand({5}, {dtype, kGpu});  // draw once first: the generator's offset must advance alike
          const Tensor got = v->op == &ts::ops::rand ? ts::rand(shape, {dtype, kGpu}) : ts::randn(shape, {dtype, kGpu});
          ts::manual_seed(42);
          ts::rand({5}, {dtype});
          const Tensor want = v->op == &ts::ops::rand ? ts::rand(shape, {dtype}) : ts::randn(shape, {dtype});
          // rand: bit for bit; randn: logf/cosf may differ from libm by an ulp
          CHECK_CLOSE(got, ref_of(want).v, v->op == &ts::ops::rand ? 0.0 : tolerance_for(dtype) / 10, 42);
        }
      }
    }
  }
}

TEST_CASE("cuda: every variant: copy_ device<->device, host<->device, strided, broadcast, converting") {
  if (no_gpu()) return;
  for (const Variant* v : cuda_variants({&ts::ops::copy_})) {
    PreferVariant use(*v);
    const std::vector<Dims> shapes = {{1}, {7, 13}, {33, 65}, {3, 5, 17}};
    const DType all[] = {DType::f32, DType::bf16, DType::f16, DType::b8, DType::i64};
    uint64_t seed = 700;
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (!use.wants(i, DType::f32)) continue;
      for (DType from : kFloatDTypes) {
        for (DType to : all) {
          for (Layout layout : kLayouts) {
            ++seed;
            INFO(str(v->name), " ", str(shapes[i]), " ", str(from), " -> ", str(to), " ", str(layout));
            const Pair src = make_both(shapes[i], from, seed, layout, 8.0);
            Tensor want = ts::empty(shapes[i], {to});
            ts::copy_(want, src.cpu);  // the CPU reference's conversion
            const std::vector<double> w = want.to_vector<double>();
            // device -> device, into a fresh contiguous tensor and into a transposed view
            Tensor d1 = ts::empty(shapes[i], {to, kGpu});
            ts::copy_(d1, src.gpu);
            CHECK_CLOSE(d1, w, 0.0, seed);
            if (shapes[i].size() >= 2) {
              Dims swapped = shapes[i];
              std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
              Tensor buffer = ts::empty(swapped, {to, kGpu});
              Tensor d2 = buffer.transpose(-1, -2);
              ts::copy_(d2, src.gpu);
              CHECK_CLOSE(d2, w, 0.0, seed);
            }
            // host -> device (a strided host source is staged) and device -> host
            Tensor h2d = ts::empty(shapes[i], {to, kGpu});
            ts::copy_(h2d, src.cpu);
            CHECK_CLOSE(h2d, w, 0.0, seed);
            Tensor d2h = ts::empty(shapes[i], {to});
            ts::copy_(d2h, src.gpu);
            CHECK_CLOSE(d2h, w, 0.0, seed);
          }
        }
      }
    }
    // Broadcast source [N] -> [M, N], and into a non-contiguous host destination.
    const Pair row = make_both({17}, DType::bf16, 777);
    Tensor dst = ts::empty({9, 17}, {DType::f32, kGpu});
    ts::copy_(dst, row.gpu);
    Tensor want = ts::empty({9, 17}, {DType::f32});
    ts::copy_(want, row.cpu);
    CHECK_CLOSE(dst, want.to_vector<double>(), 0.0, 777);
    Tensor host_buffer = ts::zeros({17, 9});
    Tensor host_view = host_buffer.t();
    ts::copy_(host_view, dst);
    CHECK_CLOSE(host_view, want.to_vector<double>(), 0.0, 777);
    // to(): device moves and dtype changes through copy_
    const Pair x = make_both({5, 6}, DType::f32, 778, Layout::transposed);
    CHECK_CLOSE(x.gpu.to(DType::bf16).to(ts::kCPU), ref_of(x.cpu.to(DType::bf16)).v, 0.0, 778);
    CHECK(x.gpu.clone().is_contiguous());
    CHECK_CLOSE(x.gpu.contiguous(), ref_of(x.cpu).v, 0.0, 778);
  }
}

// ---- matrix products ---------------------------------------------------------------------------------

namespace {

struct Mnk {
  int64_t M, N, K;
};
// 1, primes, one off the 16- and 32-wide tiles, a zero K.
// The last two have rows of a multiple of 16 bytes, so that the tensor-core rungs (mma.sync, wgmma)
// take the contiguous and t() layouts; the last sits at an even index, run in quick mode too.
const std::vector<Mnk> kMnk = {{1, 1, 1},   {7, 5, 13},   {31, 17, 33}, {64, 64, 64}, {33, 65, 127},
                               {1, 3, 257}, {17, 15, 1},  {96, 128, 48}, {5, 7, 0},   {130, 40, 16},
                               {72, 136, 40}};

Ref ref_addmm(const Ref& c, const Ref& a, const Ref& b, double beta, double alpha) {
  return ref_binary(c, ref_matmul(a, b), [=](double cv, double p) { return (beta == 0 ? 0 : beta * cv) + alpha * p; });
}

// Layouts for the two operands: (a, b). "stepped" and "expanded" have strides no
// GEMM library reads directly (the cuBLAS rung copies them), the others are read in place.
const std::pair<Layout, Layout> kOperandLayouts[] = {{Layout::contiguous, Layout::contiguous},
                                                     {Layout::transposed, Layout::contiguous},
                                                     {Layout::contiguous, Layout::transposed},
                                                     {Layout::transposed, Layout::transposed},
                                                     {Layout::stepped, Layout::expanded}};

bool supported(const Variant& v, const std::function<Tensor()>& run, Tensor& out) {
  try {
    out = run();
    return true;
  } catch (const ts::Error& e) {
    if (std::string(e.what()).find("cannot run this call") == std::string::npos) throw;
    MESSAGE(std::string(v.name), " declines: ", std::string(e.what()));
    return false;
  }
}

}  // namespace

TEST_CASE("cuda: every variant: mm, bmm and addmm (naive, tiled, cuBLAS) over shapes, t() views, strides") {
  if (no_gpu()) return;
  for (const Variant* v : cuda_variants({&ts::ops::mm, &ts::ops::bmm, &ts::ops::addmm})) {
    PreferVariant use(*v);
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 800;
      for (size_t i = 0; i < kMnk.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        const auto [M, N, K] = kMnk[i];
        for (const auto& [la, lb] : kOperandLayouts) {
          ++seed;
          INFO(str(v->name), " ", str(dtype), " M=", M, " N=", N, " K=", K, " a ", str(la), " b ", str(lb));
          if (v->op == &ts::ops::mm) {
            const Pair a = make_both({M, K}, dtype, seed, la), b = make_both({K, N}, dtype, seed + 1, lb);
            Tensor got;
            if (!supported(*v, [&] { return ts::mm(a.gpu, b.gpu); }, got)) continue;
            CHECK_GPU(got, ref_matmul(ref_of(a.cpu), ref_of(b.cpu)), dtype, seed);
          } else if (v->op == &ts::ops::bmm) {
            const int64_t B = 3;
            const Pair a = make_both({B, M, K}, dtype, seed, la), b = make_both({B, K, N}, dtype, seed + 1, lb);
            Tensor got;
            if (!supported(*v, [&] { return ts::bmm(a.gpu, b.gpu); }, got)) continue;
            CHECK_GPU(got, ref_matmul(ref_of(a.cpu), ref_of(b.cpu)), dtype, seed);
          } else {
            const Pair a = make_both({M, K}, dtype, seed, la), b = make_both({K, N}, dtype, seed + 1, lb);
            // c as a bias row (the epilogue), a full matrix (C with beta), a column and a 0-d scalar (materialized)
            const std::pair<Dims, std::pair<double, double>> cs[] = {
                {{N}, {1, 1}}, {{M, N}, {1, 1}}, {{M, N}, {0.5, 2}}, {{M, 1}, {1, 1}}, {{}, {1, -1}}, {{N}, {0, 1}}};
            for (const auto& [cshape, ab] : cs) {
              const auto [beta, alpha] = ab;
              INFO("c ", str(cshape), " beta ", beta, " alpha ", alpha);
              const Pair c = make_both(cshape, dtype, seed + 2, Layout::contiguous, 1, [&](Tensor& t) {
                if (beta == 0) ts::fill_(t, NAN);  // beta = 0 must ignore c entirely
              });
              Tensor got;
              if (!supported(*v, [&] { return ts::addmm(c.gpu, a.gpu, b.gpu, beta, alpha); }, got)) continue;
              CHECK_GPU(got, ref_addmm(ref_of(c.cpu), ref_of(a.cpu), ref_of(b.cpu), beta, alpha), dtype, seed);
            }
          }
        }
      }
      if (v->op == &ts::ops::mm && dtype == DType::bf16 && !quick()) {  // more row blocks than a grid's y holds (65535)
        const int64_t M = 70000 * 32 + 5;
        INFO(str(v->name), " tall M=", M);
        const Pair a = make_both({M, 2}, dtype, 850), b = make_both({2, 3}, dtype, 851);
        CHECK_GPU(ts::mm(a.gpu, b.gpu), ref_matmul(ref_of(a.cpu), ref_of(b.cpu)), dtype, 850);
      }
    }
  }
}

// The tensor-core rungs tile by 128 x 128 (mma.sync) and 128 x 256 (wgmma) with k-steps of 64: sizes
// one off those, smaller than one tile, tall and wide, K of one 16-byte chunk and K ending inside
// a chunk (a narrowed view), B as rows of K and as a t() view, a batch, and addmm's epilogue.
TEST_CASE("cuda: tensor-core GEMM rungs (mma.sync, wgmma) on tile edges, both B layouts, batches and addmm") {
  if (no_gpu()) return;
  struct Case {
    int64_t M, N, K;
  };
  const std::vector<Case> cases = {{1, 8, 8},      {127, 264, 72},  {129, 257, 200}, {128, 256, 64}, {300, 520, 1016},
                                   {2000, 16, 40}, {16, 2000, 24},  {513, 1000, 8},  {67, 136, 136}};
  for (const char* name : {"mm/cuda/mma", "mm/cuda/wgmma", "bmm/cuda/mma", "bmm/cuda/wgmma", "addmm/cuda/mma",
                           "addmm/cuda/wgmma"}) {
    ts::VariantOverride use(name);  // forced: a call the rung refuses is an error, not a fallback
    if (std::string why; !ts::gpu_meets_rung(name, kGpu, &why)) {
      MESSAGE(std::string(name), " not run on this GPU: ", why);
      // Forced by name where the GPU lacks what it needs: the reason, as a ts::Error, no launch.
      const Pair a = make_both({16, 16}, DType::bf16, 5990);
      const std::string n(name);
      if (n.rfind("bmm", 0) == 0) {
        const Pair a3 = make_both({2, 16, 16}, DType::bf16, 5991);
        CHECK_THROWS_WITH_AS(ts::bmm(a3.gpu, a3.gpu), doctest::Contains("needs compute capability"), ts::Error);
      } else if (n.rfind("addmm", 0) == 0) {
        CHECK_THROWS_WITH_AS(ts::addmm(a.gpu, a.gpu, a.gpu), doctest::Contains("needs compute capability"), ts::Error);
      } else {
        CHECK_THROWS_WITH_AS(ts::mm(a.gpu, a.gpu), doctest::Contains("needs compute capability"), ts::Error);
      }
      continue;
    }
    for (const ts::WgmmaSchedule schedule : schedules_for(name))
    for (DType dtype : {DType::bf16, DType::f16}) {
      const ts::WgmmaScheduleOverride scheduled(schedule);
      INFO("schedule ", ts::wgmma_schedule_name(schedule));
      uint64_t seed = 5000;
      for (size_t i = 0; i < cases.size(); ++i) {
        if (!sweep_runs(i)) continue;
        const auto [M, N, K] = cases[i];
        for (bool t_view : {false, true}) {
          seed += 3;
          if (!t_view && N % 8 != 0) continue;  // B [K, N] rows must be 16-byte aligned
          INFO(name, " ", str(dtype), " M=", M, " N=", N, " K=", K, t_view ? " b = t(W)" : " b [K, N]");
          const Layout lb = t_view ? Layout::transposed : Layout::contiguous;
          const std::string n(name);
          if (n.rfind("bmm", 0) == 0) {
            const Pair a = make_both({3, M, K}, dtype, seed), b = make_both({3, K, N}, dtype, seed + 1, lb);
            CHECK_GPU(ts::bmm(a.gpu, b.gpu), ref_matmul(ref_of(a.cpu), ref_of(b.cpu)), dtype, seed);
          } else if (n.rfind("addmm", 0) == 0) {
            const Pair a = make_both({M, K}, dtype, seed), b = make_both({K, N}, dtype, seed + 1, lb);
            const Pair bias = make_both({N}, dtype, seed + 2), c = make_both({M, N}, dtype, seed + 2);
            CHECK_GPU(ts::addmm(bias.gpu, a.gpu, b.gpu), ref_addmm(ref_of(bias.cpu), ref_of(a.cpu), ref_of(b.cpu), 1, 1),
                      dtype, seed);
            CHECK_GPU(ts::addmm(c.gpu, a.gpu, b.gpu, 0.5, 2),
                      ref_addmm(ref_of(c.cpu), ref_of(a.cpu), ref_of(b.cpu), 0.5, 2), dtype, seed);
          } else {
            const Pair a = make_both({M, K}, dtype, seed), b = make_both({K, N}, dtype, seed + 1, lb);
            CHECK_GPU(ts::mm(a.gpu, b.gpu), ref_matmul(ref_of(a.cpu), ref_of(b.cpu)), dtype, seed);
          }
        }
      }
      if (std::string(name).rfind("mm/", 0) == 0) {
        // K = 61 inside rows of 64: the last 16-byte chunk of each row is partly outside the matrix.
        const Pair a64 = make_both({130, 64}, dtype, 5900), b = make_both({61, 136}, dtype, 5901);
        const Tensor a_gpu = ts::narrow(a64.gpu, 1, 0, 61);
        CHECK_GPU(ts::mm(a_gpu, b.gpu), ref_matmul(ref_of(ts::narrow(a64.cpu, 1, 0, 61)), ref_of(b.cpu)), dtype, 5900);
        // What the rung refuses, it names: an A read by columns (a t() view) and f32.
        const Pair at = make_both({64, 64}, dtype, 5902, Layout::transposed), b64 = make_both({64, 136}, dtype, 5904);
        CHECK_THROWS_WITH_AS(ts::mm(at.gpu, b64.gpu), doctest::Contains("unit column stride"), ts::Error);
        const Pair f = make_both({16, 16}, DType::f32, 5903);
        CHECK_THROWS_WITH_AS(ts::mm(f.gpu, f.gpu), doctest::Contains("bf16 or f16"), ts::Error);
      }
    }
  }
}

// gelu_tanh(x W[:H]^T) * (x W[H:]^T) in one GEMM's epilogue: hidden sizes one off the 128-column
// output tile, rows one off 128, 3-D x, both 16-bit types; the reference is float64 throughout.
TEST_CASE("cuda: every variant: linear_geglu (the GeGLU in a GEMM's epilogue) against the float64 reference") {
  if (no_gpu()) return;
  auto gelu_tanh = [](double e) {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * e * (1 + std::tanh(c * (e + 0.044715 * e * e * e)));
  };
  struct Case {
    Dims x;
    int64_t hidden;
  };
  const std::vector<Case> cases = {{{1, 64}, 8}, {{129, 72}, 127}, {{2, 65, 136}, 129}, {{300, 768}, 384}, {{128, 16}, 256}};
  for (const Variant* v : cuda_variants({&ts::ops::linear_geglu}))
  for (const ts::WgmmaSchedule schedule : schedules_for(v->name)) {
    const ts::WgmmaScheduleOverride scheduled(schedule);
    INFO("schedule ", ts::wgmma_schedule_name(schedule));
    PreferVariant use(*v);
    for (DType dtype : {DType::bf16, DType::f16}) {
      uint64_t seed = 6000;
      for (size_t i = 0; i < cases.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        const auto& [xs, H] = cases[i];
        seed += 2;
        INFO(describe(*v, dtype, xs), " hidden ", H);
        const int64_t D = xs.back();
        const Pair x = make_both(xs, dtype, seed), w = make_both({2 * H, D}, dtype, seed + 1, Layout::contiguous,
                                                                 1.0 / std::sqrt(static_cast<double>(D)));
        const Ref h = ref_matmul(ref_of(x.cpu), ref_transpose_last2(ref_of(w.cpu)));  // [*, 2H] in double
        Dims out_shape = h.shape;
        out_shape[out_shape.size() - 1] = H;
        Ref want{out_shape, {}};
        const int64_t rows = static_cast<int64_t>(h.v.size()) / (2 * H);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < H; ++j)
            want.v.push_back(gelu_tanh(h.v[r * 2 * H + j]) * h.v[r * 2 * H + H + j]);
        CHECK_GPU(ts::linear_geglu(x.gpu, w.gpu), want, dtype, seed);
      }
    }
  }
}

// Past one tile per SM: a persistent block takes several tiles, and a ping-pong consumer every other
// one of its block's (its place in the ring skipping the other's k-steps). 4100 x 4104 is 33 x 33
// tiles of 128 x 128 (33 x 17 of 128 x 256) for 132 SMs at most; K of one k-step and of more k-steps
// than the ring has stages; B as rows of K and as a t() view; addmm's bias row read two columns at
// a time, and at N = 4103 (a t() view) its last column alone and the output's rows stored from
// registers (not 16-byte aligned). The rows on either side of a few 64-row boundaries are checked
// against float64 (the whole product would keep the reference busy for minutes).
TEST_CASE("cuda: wgmma GEMM, both schedules, several tiles per block: mm, addmm with a bias row, linear_geglu") {
  if (no_gpu()) return;
  if (std::string why; !ts::gpu_meets_rung("mm/cuda/wgmma", kGpu, &why)) {
    MESSAGE("mm/cuda/wgmma not run on this GPU: ", why);
    return;
  }
  const int64_t M = 4100;
  const std::vector<int64_t> rows = {0, 1, 63, 64, 127, 128, 2047, 2048, 2111, 2112, 4095, 4096, 4099};
  auto gelu_tanh = [](double e) {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * e * (1 + std::tanh(c * (e + 0.044715 * e * e * e)));
  };
  // Row r of got [M, n] against `want_row(r)`, for every checked row.
  auto check_rows = [&](const Tensor& got, DType dtype, uint64_t seed, const std::function<Ref(int64_t)>& want_row) {
    for (const int64_t r : rows) {
      INFO("row ", r);
      CHECK_GPU(ts::narrow(got, 0, r, 1), want_row(r), dtype, seed);
    }
  };
  uint64_t seed = 7000;
  for (const ts::WgmmaSchedule schedule : {ts::WgmmaSchedule::cooperative, ts::WgmmaSchedule::pingpong})
    for (DType dtype : {DType::bf16, DType::f16})
      for (const int64_t K : {40, 520}) {
        if (quick() && K == 40) continue;
        const ts::WgmmaScheduleOverride scheduled(schedule);
        INFO("schedule ", ts::wgmma_schedule_name(schedule), " ", str(dtype), " K=", K);
        seed += 10;
        const Pair a = make_both({M, K}, dtype, seed);
        const Ref a_ref = ref_of(a.cpu);
        auto a_row = [&](int64_t r) {
          return Ref{{1, K}, std::vector<double>(a_ref.v.begin() + r * K, a_ref.v.begin() + (r + 1) * K)};
        };
        for (const bool t_view : {false, true}) {
          INFO(std::string(t_view ? "b = t(W)" : "b [K, N]"));
          const Pair b = make_both({K, 4104}, dtype, seed + 1, t_view ? Layout::transposed : Layout::contiguous);
          const Ref b_ref = ref_of(b.cpu);
          ts::VariantOverride use("mm/cuda/wgmma");
          check_rows(ts::mm(a.gpu, b.gpu), dtype, seed, [&](int64_t r) { return ref_matmul(a_row(r), b_ref); });
        }
        {
          const Pair b = make_both({K, 4103}, dtype, seed + 2, Layout::transposed);
          const Pair bias = make_both({4103}, dtype, seed + 3);
          const Ref b_ref = ref_of(b.cpu), bias_ref = ref_of(bias.cpu);
          ts::VariantOverride use("addmm/cuda/wgmma");
          check_rows(ts::addmm(bias.gpu, a.gpu, b.gpu), dtype, seed, [&](int64_t r) {
            return ref_binary(ref_matmul(a_row(r), b_ref), bias_ref, [](double p, double c) { return p + c; });
          });
        }
        {
          const int64_t H = 2056;  // 17 output tiles of 128 columns (cooperative), 33 of 64 (ping-pong)
          const Pair w = make_both({2 * H, K}, dtype, seed + 4, Layout::contiguous, 1.0 / std::sqrt(double(K)));
          const Ref wt = ref_transpose_last2(ref_of(w.cpu));
          ts::VariantOverride use("linear_geglu/cuda/wgmma");
          check_rows(ts::linear_geglu(a.gpu, w.gpu), dtype, seed, [&](int64_t r) {
            const Ref h = ref_matmul(a_row(r), wt);
            Ref want{{1, H}, {}};
            for (int64_t j = 0; j < H; ++j) want.v.push_back(gelu_tanh(h.v[j]) * h.v[H + j]);
            return want;
          });
        }
      }
}

TEST_CASE("cuda: cuBLAS f32 GEMMs are full f32 unless TF32 is allowed") {
  if (no_gpu()) return;
  const Pair a = make_both({256, 512}, DType::f32, 900), b = make_both({512, 384}, DType::f32, 901);
  const Ref want = ref_matmul(ref_of(a.cpu), ref_of(b.cpu));
  ts::VariantOverride use("mm/cuda/cublas");
  CHECK_FALSE(ts::cuda::allow_tf32());
  const Comparison off = compare(ts::mm(a.gpu, b.gpu), want.v, 1e-5, 900);
  CHECK_MESSAGE(off.ok, off.report);
  ts::cuda::set_allow_tf32(true);
  const Comparison on = compare(ts::mm(a.gpu, b.gpu), want.v, 5e-3, 900);
  ts::cuda::set_allow_tf32(false);
  CHECK_MESSAGE(on.ok, on.report);
  MESSAGE("f32 GEMM, TF32 off: ", off.report, "\nTF32 on: ", on.report);
}

// ---- composites on CUDA, through the default (best) rungs ---------------------------------------------------

TEST_CASE("cuda: composites run on the GPU: linear, matmul, masked_fill, attention") {
  if (no_gpu()) return;
  for (DType dtype : kFloatDTypes) {
    INFO(str(dtype));
    const Pair x = make_both({4, 6, 32}, dtype, 1000), w = make_both({24, 32}, dtype, 1001);
    const Pair bias = make_both({24}, dtype, 1002);
    const Ref want = ref_binary(ref_matmul(ref_of(x.cpu), ref_transpose_last2(ref_of(w.cpu))), ref_of(bias.cpu),
                                [](double p, double b) { return p + b; });
    CHECK_GPU(ts::linear(x.gpu, w.gpu, bias.gpu), want, dtype, 1000);
    const Pair y = make_both({2, 1, 32, 5}, dtype, 1003);
    CHECK_GPU(ts::matmul(x.gpu, y.gpu), ref_matmul(ref_of(x.cpu), ref_of(y.cpu)), dtype, 1003);

    const Pair q = make_both({2, 3, 17, 16}, dtype, 1004), k = make_both({2, 3, 17, 16}, dtype, 1005),
               v = make_both({2, 3, 17, 8}, dtype, 1006);
    const Tensor out = ts::scaled_dot_product_attention(q.gpu, k.gpu, v.gpu, {}, /*is_causal=*/true);
    CHECK(out.device() == kGpu);
    // scores, probabilities and output are each rounded to dtype: twice the one-op tolerance
    CHECK_CLOSE(out, ref_sdpa(ref_of(q.cpu), ref_of(k.cpu), ref_of(v.cpu), nullptr, false, true).v,
                2 * tolerance_for(dtype), 1004);
  }
}

// ---- attention ---------------------------------------------------------------------------------

TEST_CASE("cuda: every variant: scaled_dot_product_attention's fused rungs against the float64 reference") {
  if (no_gpu()) return;
  struct Case {
    int64_t B, H, S, L, D;
    bool causal;
  };
  // S = 1 and primes; L != S; head dims 64 and 128 (flash_v2's) and 40 (flash_v1's only).
  const std::vector<Case> cases = {{1, 1, 1, 1, 64, true},   {2, 3, 7, 7, 64, true},    {1, 2, 65, 65, 128, false},
                                   {2, 1, 33, 70, 64, false}, {1, 2, 129, 129, 64, true}, {1, 1, 17, 17, 40, true}};
  for (const Variant* v : cuda_variants({&ts::ops::scaled_dot_product_attention})) {
    PreferVariant use(*v);
    for (DType dtype : {DType::bf16, DType::f16}) {
      uint64_t seed = 1700;
      for (size_t i = 0; i < cases.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        const Case& c = cases[i];
        seed += 3;
        INFO(describe(*v, dtype, {c.B, c.H, c.S, c.D}), " L ", c.L, c.causal ? " causal" : " full");
        const Pair q = make_both({c.B, c.H, c.S, c.D}, dtype, seed), k = make_both({c.B, c.H, c.L, c.D}, dtype, seed + 1),
                   vv = make_both({c.B, c.H, c.L, c.D}, dtype, seed + 2);
        const Tensor out = ts::scaled_dot_product_attention(q.gpu, k.gpu, vv.gpu, {}, c.causal);
        // scores, probabilities and output are each rounded to dtype: twice the one-op tolerance
        CHECK_CLOSE(out, ref_sdpa(ref_of(q.cpu), ref_of(k.cpu), ref_of(vv.cpu), nullptr, false, c.causal).v,
                    2 * tolerance_for(dtype), seed);
      }
    }
  }
}

// ---- fused elementwise ------------------------------------------------------------------------

TEST_CASE("cuda: every variant: geglu over shapes, layouts and the halves of a merged GEMM output") {
  if (no_gpu()) return;
  // 16-byte packs need the row length to be a multiple of 8 (bf16/f16) or 4 (f32): 3072 and 64 take
  // the packed kernel, 13 and 31 the strided one; 1 and primes test the edges of both.
  const std::vector<Dims> shapes = {{1}, {7}, {3, 13}, {5, 2, 31}, {4, 64}, {33, 3072}};
  auto gelu_tanh = [](double e) {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * e * (1 + std::tanh(c * (e + 0.044715 * e * e * e)));
  };
  for (const Variant* v : cuda_variants({&ts::ops::geglu})) {
    PreferVariant use(*v);
    for (DType dtype : kFloatDTypes) {
      uint64_t seed = 1500;
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (!use.wants(i, dtype)) continue;
        for (Layout layout : kLayouts) {
          ++seed;
          INFO(describe(*v, dtype, shapes[i]), " layout ", str(layout));
          const Pair g = make_both(shapes[i], dtype, seed, layout, 2.0), u = make_both(shapes[i], dtype, seed + 1, layout);
          const Ref want = rounded(ref_binary(ref_unary(ref_of(g.cpu), gelu_tanh), ref_of(u.cpu),
                                              [](double a, double b) { return a * b; }),
                                   dtype);
          CHECK_GPU(ts::geglu(g.gpu, u.gpu), want, dtype, seed);
        }
      }
      // The merged MLP's case: gate and up are the halves of one [rows, 2H] tensor (row stride 2H).
      const Pair h = make_both({17, 2 * 96}, dtype, 1600);
      const Tensor gate = ts::narrow(h.gpu, 1, 0, 96), up = ts::narrow(h.gpu, 1, 96, 96);
      const Ref want = rounded(ref_binary(ref_unary(ref_of(ts::narrow(h.cpu, 1, 0, 96)), gelu_tanh),
                                          ref_of(ts::narrow(h.cpu, 1, 96, 96)), [](double a, double b) { return a * b; }),
                               dtype);
      CHECK_GPU(ts::geglu(gate, up), want, dtype, 1600);
    }
  }
}

#if TS_HAVE_CUDA  // the launch hand-off is the CUDA backend's (tensor/cuda_check.h)
namespace ts::testing {
void launch_probe(int* out, int threads);  // support/launch_probe.cu
}

TEST_CASE("cuda: a failed launch is reported once, by check_launch, naming the variant") {
  // The hand-off itself needs no GPU: the first error noted is the one reported, then it is cleared.
  ts::cuda::note_launch(cudaErrorInvalidConfiguration);
  ts::cuda::note_launch(cudaErrorLaunchOutOfResources);
  CHECK_THROWS_WITH(ts::cuda::check_launch("add/cuda/naive"),
                    doctest::Contains("add/cuda/naive: launch failed: invalid configuration argument"));
  CHECK_NOTHROW(ts::cuda::check_launch("add/cuda/naive"));
  if (no_gpu()) return;
  const Tensor out = ts::empty({1024}, {DType::i64, ts::kCUDA});
  ts::testing::launch_probe(static_cast<int*>(out.data_ptr()), 2048);  // past the 1024 threads a block may have
  // cudaLaunchKernel says cudaErrorInvalidValue here (the chevrons say cudaErrorInvalidConfiguration).
  CHECK_THROWS_WITH(ts::cuda::check_launch("probe/cuda/launch"), doctest::Contains("probe/cuda/launch: launch failed:"));
  CHECK_NOTHROW(ts::cuda::check_launch("probe/cuda/launch"));  // reported once: now clear
  ts::testing::launch_probe(static_cast<int*>(out.data_ptr()), 1024);  // the context is still usable
  CHECK_NOTHROW(ts::cuda::check_launch("probe/cuda/launch"));
  ts::cuda::synchronize();
}
#endif

// Last: every cuda variant of the registry was exercised by a case above.
TEST_CASE("cuda: zz every registered cuda variant has a checker") {
  if (no_gpu()) return;
  if (quick() || checked().empty()) {
    MESSAGE("skipped: runs only after the full set of cuda variant cases (not under -tc filters or quick mode)");
    return;
  }
  for (const Variant* v : ts::all_variants())
    if (v->device == ts::VariantDevice::cuda) CHECK_MESSAGE(checked().count(v->name) == 1, std::string(v->name), " is never tested");
}
