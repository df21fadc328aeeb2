// tests/test_ops_elementwise.cpp: add/sub/mul/div (tensor, scalar, alpha), neg, exp, tanh,
// gelu, relu, fill_, copy_, clone: hand-computed values, then every cpu variant against a
// float64 reference over odd shapes, non-contiguous and broadcast inputs, and each float dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/reference.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;
using namespace ts::testing;

namespace {

const Dims kShapes[] = {{1}, {7}, {13, 31}, {3, 63}, {2, 5, 65}};

// GELU's two definitions, in the forms that keep every digit in the negative tail:
// 1 + erf(z) = erfc(-z) and 1 + tanh(u) = 2 / (1 + exp(-2u)).
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh(double x) {
  const double u = std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return x / (1 + std::exp(-2 * u));
}

std::vector<float> values(const Tensor& x) { return x.to_vector<float>(); }

struct UnaryCase {
  const char* name;
  const ts::OpDef* op;
  Tensor (*run)(const Tensor&);
  double (*ref)(double);
};

const UnaryCase kUnary[] = {
    {"neg", &ts::ops::neg, [](const Tensor& x) { return ts::neg(x); }, [](double x) { return -x; }},
    {"exp", &ts::ops::exp, [](const Tensor& x) { return ts::exp(x); }, [](double x) { return std::exp(x); }},
    {"tanh", &ts::ops::tanh, [](const Tensor& x) { return ts::tanh(x); }, [](double x) { return std::tanh(x); }},
    {"gelu", &ts::ops::gelu, [](const Tensor& x) { return ts::gelu(x); }, gelu_erf},
    {"gelu(tanh)", &ts::ops::gelu, [](const Tensor& x) { return ts::gelu(x, ts::GeluApprox::tanh); }, gelu_tanh},
    {"relu", &ts::ops::relu, [](const Tensor& x) { return ts::relu(x); }, [](double x) { return x > 0 ? x : 0.0; }},
};

struct BinaryCase {
  const char* name;
  const ts::OpDef* op;
  Tensor (*run)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
};

const BinaryCase kBinary[] = {
    {"add", &ts::ops::add, [](const Tensor& a, const Tensor& b) { return ts::add(a, b); },
     [](double a, double b) { return a + b; }},
    {"add(alpha=-0.5)", &ts::ops::add, [](const Tensor& a, const Tensor& b) { return ts::add(a, b, -0.5); },
     [](double a, double b) { return a - 0.5 * b; }},
    {"sub", &ts::ops::sub, [](const Tensor& a, const Tensor& b) { return ts::sub(a, b); },
     [](double a, double b) { return a - b; }},
    {"sub(alpha=3)", &ts::ops::sub, [](const Tensor& a, const Tensor& b) { return ts::sub(a, b, 3); },
     [](double a, double b) { return a - 3 * b; }},
    {"mul", &ts::ops::mul, [](const Tensor& a, const Tensor& b) { return ts::mul(a, b); },
     [](double a, double b) { return a * b; }},
    // b is moved away from 0 (below) so the quotient stays finite in f16.
    {"div", &ts::ops::div, [](const Tensor& a, const Tensor& b) { return ts::div(a, b); },
     [](double a, double b) { return a / b; }},
};

struct ScalarCase {
  const char* name;
  const ts::OpDef* op;
  Tensor (*run)(const Tensor&);
  double (*ref)(double);
};

const ScalarCase kScalar[] = {
    {"add 1.5", &ts::ops::add, [](const Tensor& a) { return ts::add(a, 1.5); }, [](double a) { return a + 1.5; }},
    {"sub 0.25", &ts::ops::sub, [](const Tensor& a) { return ts::sub(a, 0.25); }, [](double a) { return a - 0.25; }},
    {"mul -3", &ts::ops::mul, [](const Tensor& a) { return ts::mul(a, -3); }, [](double a) { return a * -3; }},
    {"div 7", &ts::ops::div, [](const Tensor& a) { return ts::div(a, 7); }, [](double a) { return a / 7; }},
};

}  // namespace

TEST_CASE("compare: a NaN or Inf in the output fails unless the reference has it there") {
  const Tensor got = ts::tensor({1, NAN, 3});
  const Comparison nan_vs_finite = compare(got, {1, 2, 3}, 1.0, 17);
  CHECK_FALSE(nan_vs_finite.ok);  // even a huge tolerance does not let a NaN through
  CHECK(nan_vs_finite.report.find("flat index 1") != std::string::npos);
  CHECK(nan_vs_finite.report.find("seed 17") != std::string::npos);
  CHECK(compare(got, {1, NAN, 3}, 1e-6).ok);
  CHECK_FALSE(compare(ts::tensor({1, 2, 3}), {1, NAN, 3}, 1.0).ok);  // a missing NaN fails too
  CHECK_FALSE(compare(ts::tensor({INFINITY}), {1e30}, 1.0).ok);
  CHECK_FALSE(compare(ts::tensor({-INFINITY}), {INFINITY}, 1.0).ok);
  CHECK(compare(ts::tensor({-INFINITY, 2}), {-INFINITY, 2}, 1e-6).ok);
  // Ordinary values: the relative L2 error against the tolerance, and the report names the worst element.
  CHECK(compare(ts::tensor({1, 2}), {1, 2.00001}, 1e-5).ok);
  const Comparison off = compare(ts::tensor({1, 2}), {1, 2.1}, 1e-5, 5);
  CHECK_FALSE(off.ok);
  CHECK(off.report.find("worst flat index 1") != std::string::npos);
  CHECK_FALSE(compare(ts::tensor({1, 2}), {1, 2, 3}, 1.0).ok);
}

TEST_CASE("elementwise: hand-computed values") {
  const Tensor a = ts::tensor({1, 2, 3}), b = ts::tensor({10, 20, 30});
  CHECK(values(ts::add(a, b)) == std::vector<float>{11, 22, 33});
  CHECK(values(ts::add(a, b, 2)) == std::vector<float>{21, 42, 63});
  CHECK(values(ts::sub(a, b)) == std::vector<float>{-9, -18, -27});
  CHECK(values(ts::sub(a, b, 0.5)) == std::vector<float>{-4, -8, -12});
  CHECK(values(ts::mul(a, b)) == std::vector<float>{10, 40, 90});
  CHECK(values(ts::div(b, a)) == std::vector<float>{10, 10, 10});
  CHECK(values(ts::add(a, 1)) == std::vector<float>{2, 3, 4});
  CHECK(values(ts::sub(a, 1)) == std::vector<float>{0, 1, 2});
  CHECK(values(ts::mul(a, 0.5)) == std::vector<float>{0.5f, 1, 1.5f});
  CHECK(values(ts::div(a, 4)) == std::vector<float>{0.25f, 0.5f, 0.75f});
  CHECK(values(ts::neg(a)) == std::vector<float>{-1, -2, -3});
  CHECK(values(ts::relu(ts::tensor({-1, 0, 2.5}))) == std::vector<float>{0, 0, 2.5f});
  CHECK_CLOSE(ts::exp(ts::tensor({0, 1, -1})), (std::vector<double>{1, std::numbers::e, 1 / std::numbers::e}), 1e-6,
              0);
  CHECK_CLOSE(ts::tanh(ts::tensor({0.5, -2})), (std::vector<double>{0.46211715726000974, -0.9640275800758169}), 1e-6,
              0);
  CHECK_CLOSE(ts::gelu(ts::tensor({1, -1, 0})), (std::vector<double>{0.8413447460685429, -0.15865525393145707, 0}),
              1e-6, 0);
  CHECK_CLOSE(ts::gelu(ts::tensor({1, -1}), ts::GeluApprox::tanh),
              (std::vector<double>{0.8411919906082768, -0.15880800939172324}), 1e-6, 0);
  // Far in the negative tail the result is tiny but still has all its digits (no 1 + erf(x) ~ 0 cancellation).
  CHECK_CLOSE(ts::gelu(ts::tensor({-5.5})), (std::vector<double>{-1.0444259356238256e-07}), 1e-5, 0);
  CHECK_CLOSE(ts::gelu(ts::tensor({-8})), (std::vector<double>{-4.9767684594174555e-15}), 1e-5, 0);
  CHECK_CLOSE(ts::gelu(ts::tensor({-5.5}), ts::GeluApprox::tanh), (std::vector<double>{-5.927640263880252e-09}), 1e-5,
              0);
  CHECK_CLOSE(ts::gelu(ts::tensor({-3}), ts::GeluApprox::tanh), (std::vector<double>{-0.003637392081773019}), 1e-5, 0);
  CHECK_CLOSE(ts::gelu(ts::tensor({3}), ts::GeluApprox::tanh), (std::vector<double>{2.9963626079182273}), 1e-5, 0);
  // Broadcasting: [2, 1] with [3] gives [2, 3].
  const Tensor col = ts::tensor({1, 2}).view({2, 1}), row = ts::tensor({10, 20, 30});
  const Tensor s = ts::add(col, row);
  CHECK(s.shape() == Dims{2, 3});
  CHECK(values(s) == std::vector<float>{11, 21, 31, 12, 22, 32});
  CHECK(values(ts::mul(ts::full({}, 2), row)) == std::vector<float>{20, 40, 60});
  // bf16 results round once: 1 + 2^-8 is a tie and goes to the even 1.0.
  CHECK(values(ts::add(ts::ones({1}, DType::bf16), ts::full({1}, 0x1p-8, DType::bf16))) == std::vector<float>{1});
  CHECK(values(ts::add(ts::ones({1}, DType::bf16), ts::full({1}, 0x1.8p-8, DType::bf16))) ==
        std::vector<float>{1 + 0x1p-7f});
  // Outputs are fresh, contiguous tensors of the broadcast shape and the input dtype.
  const Tensor h = ts::add(ts::ones({3, 2}, DType::f16).t(), ts::ones({3}, DType::f16));
  CHECK(h.dtype() == DType::f16);
  CHECK(h.is_contiguous());
  CHECK(h.shape() == Dims{2, 3});
}

TEST_CASE("elementwise: NaN and Inf propagate") {
  const Tensor x = ts::tensor({NAN, INFINITY, -INFINITY});
  const std::vector<float> r = values(ts::relu(x));
  CHECK(std::isnan(r[0]));
  CHECK(r[1] == INFINITY);
  CHECK(r[2] == 0);
  CHECK(std::isnan(values(ts::exp(x))[0]));
  CHECK(values(ts::exp(x))[2] == 0);
  CHECK(std::isnan(values(ts::add(x, 1))[0]));
  CHECK(std::isnan(values(ts::gelu(x))[0]));
  CHECK(values(ts::tanh(x))[1] == 1);
  CHECK(std::isnan(values(ts::mul(ts::tensor({0}), ts::tensor({INFINITY})))[0]));
  CHECK(values(ts::div(ts::tensor({1, -1}), ts::tensor({0, 0}))) == std::vector<float>{INFINITY, -INFINITY});
}

TEST_CASE("elementwise: unary ops, every cpu variant, against float64") {
  uint64_t seed = 100;
  for (const UnaryCase& c : kUnary) {
    INFO("case ", std::string(c.name));
    for_each_cpu_variant(c.op, [&](const ts::Variant&) {
      for (DType dtype : kFloatDTypes)
        for (const Dims& shape : kShapes)
          for (Layout layout : kLayouts) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("layout ", std::string(layout_name(layout)));
            const Tensor x = make_input(shape, dtype, ++seed, layout, 2.0);
            const Tensor y = c.run(x);
            CHECK(y.shape() == shape);
            CHECK(y.dtype() == dtype);
            CHECK_CLOSE(y, ref_unary(ref_of(x), c.ref).v, tolerance_for(dtype), seed);
          }
    });
  }
}

TEST_CASE("elementwise: binary ops, every cpu variant, against float64, with broadcasting") {
  // Pairs of shapes: equal, then broadcast in each direction (including a 0-d operand).
  const std::pair<Dims, Dims> kPairs[] = {
      {{1}, {1}}, {{7}, {7}}, {{13, 31}, {13, 31}}, {{3, 63}, {63}}, {{2, 5, 65}, {5, 1}},
      {{7, 1, 13}, {3, 1}}, {{1, 65}, {31, 1}}, {{}, {2, 7}}, {{5, 7}, {}},
  };
  uint64_t seed = 200;
  for (const BinaryCase& c : kBinary) {
    INFO("case ", std::string(c.name));
    for_each_cpu_variant(c.op, [&](const ts::Variant&) {
      for (DType dtype : kFloatDTypes)
        for (const auto& [sa, sb] : kPairs)
          for (Layout la : kLayouts)
            for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::stepped}) {
              INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
              INFO("shapes ", fmt::format("{} and {}", sa, sb));
              INFO("layout a ", std::string(layout_name(la)));
              INFO("layout b ", std::string(layout_name(lb)));
              const Tensor a = make_input(sa, dtype, ++seed, la);
              Tensor b = make_input(sb, dtype, ++seed, lb);
              if (c.op == &ts::ops::div) ts::copy_(b, ts::add(ts::relu(b), 0.5));  // divisors >= 0.5, layout kept
              const Tensor y = c.run(a, b);
              CHECK(y.shape() == ref_broadcast_shape(sa, sb));
              CHECK_CLOSE(y, ref_binary(ref_of(a), ref_of(b), c.ref).v, tolerance_for(dtype), seed);
            }
    });
  }
}

TEST_CASE("elementwise: scalar operands, every cpu variant, against float64") {
  uint64_t seed = 300;
  for (const ScalarCase& c : kScalar) {
    INFO("case ", std::string(c.name));
    for_each_cpu_variant(c.op, [&](const ts::Variant&) {
      for (DType dtype : kFloatDTypes)
        for (const Dims& shape : kShapes)
          for (Layout layout : kLayouts) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("layout ", std::string(layout_name(layout)));
            const Tensor x = make_input(shape, dtype, ++seed, layout);
            CHECK_CLOSE(c.run(x), ref_unary(ref_of(x), c.ref).v, tolerance_for(dtype), seed);
          }
    });
  }
}

TEST_CASE("elementwise: inputs are never written") {
  const Tensor a = ts::tensor({1, 2, 3}), b = ts::tensor({4, 5, 6});
  (void)ts::add(a, b);
  (void)ts::exp(a);
  (void)ts::mul(a, 2);
  CHECK(values(a) == std::vector<float>{1, 2, 3});
  CHECK(values(b) == std::vector<float>{4, 5, 6});
}

TEST_CASE("fill_: writes every element of the view, in place") {
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    for_each_cpu_variant(&ts::ops::fill_, [&](const ts::Variant&) {
      Tensor x = ts::zeros({4, 6}, dtype);
      Tensor strided = x.slice(1, 1, 6, 2);  // columns 1, 3, 5
      Tensor& r = ts::fill_(strided, 2.5);
      CHECK(&r == &strided);
      CHECK(r.storage() == x.storage());
      const std::vector<float> v = values(x);
      for (int64_t i = 0; i < 24; ++i) CHECK(v[static_cast<size_t>(i)] == (i % 2 == 1 ? 2.5f : 0.0f));
      Tensor all = x.t();
      ts::fill_(all, -1);
      CHECK(values(x) == std::vector<float>(24, -1.0f));
    });
  }
  Tensor scalar = ts::zeros({});
  ts::fill_(scalar, 3);
  CHECK(scalar.item<float>() == 3);
  Tensor flags = ts::zeros({3}, DType::b8);
  ts::fill_(flags, 1);
  CHECK(flags.to_vector<bool>() == std::vector<bool>{true, true, true});
}

TEST_CASE("copy_: dtype conversion, broadcast and strided destinations, every cpu variant") {
  uint64_t seed = 400;
  for_each_cpu_variant(&ts::ops::copy_, [&](const ts::Variant&) {
    for (DType dst_dtype : kFloatDTypes)
      for (DType src_dtype : kFloatDTypes)
        for (Layout src_layout : kLayouts) {
          INFO("dst dtype ", std::string(ts::dtype_short_name(dst_dtype)));
          INFO("src dtype ", std::string(ts::dtype_short_name(src_dtype)));
          INFO("src layout ", std::string(layout_name(src_layout)));
          const Tensor src = make_input({13, 31}, src_dtype, ++seed, src_layout);
          // The destination is a transposed view of a fresh [31, 13] tensor.
          Tensor base = ts::zeros({31, 13}, dst_dtype);
          Tensor dst = base.t();
          Tensor& r = ts::copy_(dst, src);
          CHECK(&r == &dst);
          CHECK(r.storage() == base.storage());
          // Exactly one rounding: each element is the source value converted to dst's dtype.
          std::vector<double> want = src.to_vector<double>();
          for (double& w : want) {
            const float f = static_cast<float>(w);
            w = dst_dtype == DType::bf16  ? static_cast<float>(ts::bf16(f))
                : dst_dtype == DType::f16 ? static_cast<float>(ts::f16(f))
                                          : f;
          }
          CHECK(dst.to_vector<double>() == want);
        }
    // Broadcast: a row and a 0-d tensor over a matrix.
    Tensor m = ts::zeros({3, 4});
    ts::copy_(m, ts::tensor({1, 2, 3, 4}));
    CHECK(values(m) == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
    ts::copy_(m, ts::full({}, 9, DType::f16));
    CHECK(values(m) == std::vector<float>(12, 9.0f));
    ts::copy_(m, ts::tensor({1, 2, 3}, DType::bf16).view({3, 1}));
    CHECK(values(m) == std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
    // Integer and bool conversions.
    Tensor i = ts::zeros({3}, DType::i64);
    ts::copy_(i, ts::tensor({1.9, -1.9, 7}));
    CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, -1, 7});
    Tensor f = ts::zeros({2});
    ts::copy_(f, ts::tensor({1, 0}, DType::b8));
    CHECK(values(f) == std::vector<float>{1, 0});
    // Copying a view onto itself is allowed (full overlap) and changes nothing.
    Tensor x = ts::arange(6);
    ts::copy_(x, x);
    CHECK(values(x) == std::vector<float>{0, 1, 2, 3, 4, 5});
    // Disjoint parts of one storage may be copied into each other.
    Tensor lo = x.narrow(0, 0, 3);
    ts::copy_(lo, x.narrow(0, 3, 3));
    CHECK(values(x) == std::vector<float>{3, 4, 5, 3, 4, 5});
  });
}

TEST_CASE("clone: a fresh contiguous copy with the same values and dtype") {
  uint64_t seed = 500;
  for_each_cpu_variant(&ts::ops::clone, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (Layout layout : kLayouts) {
        INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
        INFO("layout ", std::string(layout_name(layout)));
        const Tensor x = make_input({7, 13}, dtype, ++seed, layout);
        const Tensor c = ts::clone(x);
        CHECK(c.storage() != x.storage());
        CHECK(c.is_contiguous());
        CHECK(c.dtype() == dtype);
        CHECK(c.to_vector<double>() == x.to_vector<double>());
      }
  });
  // The copy is independent of its source.
  Tensor x = ts::ones({3});
  Tensor c = ts::clone(x);
  ts::fill_(c, 5);
  CHECK(values(x) == std::vector<float>{1, 1, 1});
}

TEST_CASE("in place: fill_ on an expanded tensor and copy_ from an overlapping view throw") {
  Tensor e = ts::zeros({1, 4}).expand({3, 4});
  CHECK_THROWS_WITH_AS(ts::fill_(e, 1), doctest::Contains("more than one element of the written-to tensor"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::copy_(e, ts::ones({3, 4})), doctest::Contains("ts::copy_"), ts::Error);

  Tensor x = ts::arange(10);
  Tensor dst = x.narrow(0, 0, 5);
  const Tensor src = x.narrow(0, 2, 5);  // shares elements 2..4 with dst
  CHECK_THROWS_WITH_AS(ts::copy_(dst, src), doctest::Contains("refer to a single memory location"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::copy_(dst, src), doctest::Contains("ts::copy_"), ts::Error);
  Tensor sq = ts::arange(9).view({3, 3});
  CHECK_THROWS_AS(ts::copy_(sq, sq.t()), ts::Error);  // same memory, different order
  // Nothing was written by the failed calls.
  CHECK(values(x) == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(values(e) == std::vector<float>(12, 0.0f));
}
