// tests/test_ops_matmul.cpp: mm, bmm, matmul, addmm, linear: hand-computed products, then
// every cpu variant against a float64 reference over odd shapes, t() views, odd strides,
// stride-0 operands, broadcast batches, and each float dtype.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/reference.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;
using namespace ts::testing;

namespace {

std::vector<float> values(const Tensor& x) { return x.to_vector<float>(); }

struct Mnk {
  int64_t M, N, K;
};

// 1, primes, and sizes one off a 64 tile.
const Mnk kMnk[] = {{1, 1, 1}, {7, 13, 31}, {63, 1, 65}, {65, 7, 63}, {1, 65, 31}, {13, 13, 1}, {31, 63, 64}};

// beta * c + alpha * (a @ b) in double, c broadcast to [M, N].
Ref ref_addmm(const Ref& c, const Ref& a, const Ref& b, double beta, double alpha) {
  const Ref ab = ref_matmul(a, b);
  return ref_binary(c, ab, [=](double cv, double p) { return (beta == 0 ? 0 : beta * cv) + alpha * p; });
}

// x W^T + bias in double.
Ref ref_linear(const Ref& x, const Ref& w, const Ref* bias) {
  Ref out = ref_matmul(x, ref_transpose_last2(w));
  if (bias != nullptr) out = ref_binary(out, *bias, [](double p, double b) { return p + b; });
  return out;
}

const ts::OpDef* const kMmOps[] = {&ts::ops::mm};
const ts::OpDef* const kMatmulOps[] = {&ts::ops::matmul, &ts::ops::mm, &ts::ops::bmm};
const ts::OpDef* const kLinearOps[] = {&ts::ops::linear, &ts::ops::addmm, &ts::ops::mm, &ts::ops::bmm, &ts::ops::add};

}  // namespace

TEST_CASE("mm/bmm/matmul/addmm/linear: hand-computed values") {
  const Tensor a = ts::tensor({{1, 2}, {3, 4}, {5, 6}});  // [3, 2]
  const Tensor b = ts::tensor({{1, 0, -1}, {2, 1, 0}});   // [2, 3]
  const std::vector<float> ab{5, 2, -1, 11, 4, -3, 17, 6, -5};
  for_each_cpu_variant(&ts::ops::mm, [&](const ts::Variant&) {
    CHECK(values(ts::mm(a, b)) == ab);
    CHECK(ts::mm(a, b).shape() == Dims{3, 3});
    CHECK(values(ts::mm(b, a)) == std::vector<float>{-4, -4, 5, 8});
    CHECK(values(ts::mm(b.t(), a.t())) == std::vector<float>{5, 11, 17, 2, 4, 6, -1, -3, -5});  // (ab)^T
  });
  for_each_cpu_variant(&ts::ops::bmm, [&](const ts::Variant&) {
    const Tensor ba = ts::tensor({{{1, 2}, {3, 4}}, {{0, 1}, {1, 0}}});
    const Tensor bb = ts::tensor({{{1, 1}, {0, 1}}, {{2, 3}, {4, 5}}});
    CHECK(values(ts::bmm(ba, bb)) == std::vector<float>{1, 3, 3, 7, 4, 5, 2, 3});
  });
  CHECK(values(ts::matmul(a, b)) == ab);
  CHECK(values(ts::matmul(ts::tensor({1, 2}), ts::tensor({3, 4}))) == std::vector<float>{11});
  CHECK(ts::matmul(ts::tensor({1, 2}), ts::tensor({3, 4})).dim() == 0);
  CHECK(values(ts::matmul(a, ts::tensor({1, -1}))) == std::vector<float>{-1, -1, -1});
  CHECK(values(ts::matmul(ts::tensor({1, 1, 1}), a)) == std::vector<float>{9, 12});
  for_each_cpu_variant(&ts::ops::addmm, [&](const ts::Variant&) {
    CHECK(values(ts::addmm(ts::tensor({10, 20, 30}), a, b)) == std::vector<float>{15, 22, 29, 21, 24, 27, 27, 26, 25});
    CHECK(values(ts::addmm(ts::tensor({10, 20, 30}), a, b, 0.5, 2)) ==
          std::vector<float>{15, 14, 13, 27, 18, 9, 39, 22, 5});
    CHECK(values(ts::addmm(ts::ones({3, 3}), a, b, -1, 1)) == std::vector<float>{4, 1, -2, 10, 3, -4, 16, 5, -6});
  });
  // linear: x W^T + b with W [out, in].
  const Tensor w = ts::tensor({{1, 0}, {0, 1}, {1, 1}});  // [3, 2]
  CHECK(values(ts::linear(a, w)) == std::vector<float>{1, 2, 3, 3, 4, 7, 5, 6, 11});
  CHECK(values(ts::linear(a, w, ts::tensor({1, 1, -1}))) == std::vector<float>{2, 3, 2, 4, 5, 6, 6, 7, 10});
  CHECK(values(ts::linear(ts::tensor({1, 2}), w, ts::tensor({0, 0, 1}))) == std::vector<float>{1, 2, 4});
}

TEST_CASE("mm: every cpu variant against float64: odd shapes, t() views, odd strides, stride 0") {
  uint64_t seed = 3000;
  for_each_cpu_variant(&ts::ops::mm, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const Mnk& s : kMnk)
        for (Layout la : kLayouts)
          for (Layout lb : kRightLayouts) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("M N K ", s.M, " ", s.N, " ", s.K);
            INFO("layout a ", std::string(layout_name(la)));
            INFO("layout b ", std::string(layout_name(lb)));
            const Tensor a = make_input({s.M, s.K}, dtype, ++seed, la);
            const Tensor b = make_input({s.K, s.N}, dtype, ++seed, lb);
            const Tensor out = ts::mm(a, b);
            CHECK(out.shape() == Dims{s.M, s.N});
            CHECK(out.dtype() == dtype);
            CHECK_CLOSE(out, ref_matmul(ref_of(a), ref_of(b)).v, tolerance_for(dtype), seed);
          }
  });
}

TEST_CASE("mm: every variant matches mm/cpu/ref on t() operands and odd strides") {
  // The reference rung is the oracle of the ladder; every other rung must agree with it.
  uint64_t seed = 3100;
  for (DType dtype : kFloatDTypes)
    for (const Mnk& s : kMnk) {
      INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
      INFO("M N K ", s.M, " ", s.N, " ", s.K);
      // a = t() of a [K, M] tensor; b = every other column of a [K, 2N+1] tensor, offset 1; and
      // an as_strided operand whose rows are further apart than its width.
      const Tensor a = make_input({s.M, s.K}, dtype, ++seed, Layout::transposed);
      const Tensor b = make_input({s.K, s.N}, dtype, ++seed, Layout::stepped);
      const Tensor big = make_input({s.K * (s.N + 3) + 5}, dtype, ++seed);
      const Tensor c = big.as_strided({s.K, s.N}, {s.N + 3, 1}, 5);
      Tensor ref_ab, ref_ac, ref_ta;
      {
        ts::VariantOverride use("mm/cpu/ref");
        ref_ab = ts::mm(a, b);
        ref_ac = ts::mm(a, c);
        ref_ta = ts::mm(b.t(), a.t());
      }
      for (const ts::Variant& v : ts::ops::mm.rungs) {
        if (!v.runs_on(ts::DeviceType::cpu)) continue;
        INFO("variant ", std::string(v.name));
        ts::VariantOverride use(v.name);
        CHECK_CLOSE(ts::mm(a, b), ref_ab.to_vector<double>(), tolerance_for(dtype), seed);
        CHECK_CLOSE(ts::mm(a, c), ref_ac.to_vector<double>(), tolerance_for(dtype), seed);
        CHECK_CLOSE(ts::mm(b.t(), a.t()), ref_ta.to_vector<double>(), tolerance_for(dtype), seed);
      }
    }
}

TEST_CASE("mm: an empty reduction (K = 0) gives zeros and empty outputs are fine") {
  for_each_cpu_variant(&ts::ops::mm, [&](const ts::Variant&) {
    CHECK(values(ts::mm(ts::zeros({2, 0}), ts::zeros({0, 3}))) == std::vector<float>(6, 0.0f));
    CHECK(ts::mm(ts::zeros({0, 4}), ts::zeros({4, 3})).shape() == Dims{0, 3});
    CHECK(ts::mm(ts::zeros({2, 4}), ts::zeros({4, 0})).numel() == 0);
  });
}

TEST_CASE("bmm: every cpu variant against float64: batches, t() views, strides, stride-0 batches") {
  struct Bmnk {
    int64_t B, M, N, K;
  };
  const Bmnk kCases[] = {{1, 1, 1, 1}, {3, 7, 13, 31}, {2, 63, 5, 65}, {5, 1, 1, 31}, {2, 13, 65, 7}};
  uint64_t seed = 3200;
  for_each_cpu_variant(&ts::ops::bmm, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const Bmnk& s : kCases)
        for (Layout la : kLayouts)
          for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::stepped, Layout::expanded,
                             Layout::expanded_last}) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("B M N K ", s.B, " ", s.M, " ", s.N, " ", s.K);
            INFO("layout a ", std::string(layout_name(la)));
            INFO("layout b ", std::string(layout_name(lb)));
            const Tensor a = make_input({s.B, s.M, s.K}, dtype, ++seed, la);
            const Tensor b = make_input({s.B, s.K, s.N}, dtype, ++seed, lb);
            const Tensor out = ts::bmm(a, b);
            CHECK(out.shape() == Dims{s.B, s.M, s.N});
            CHECK_CLOSE(out, ref_matmul(ref_of(a), ref_of(b)).v, tolerance_for(dtype), seed);
          }
  });
}

TEST_CASE("matmul: torch.matmul's 1-D, 2-D, N-D and broadcast-batch cases") {
  const std::pair<Dims, Dims> kCases[] = {
      {{7}, {7}},                  // dot product -> 0-d
      {{13}, {13, 7}},             // vector @ matrix -> [7]
      {{7, 13}, {13}},             // matrix @ vector -> [7]
      {{7, 13}, {13, 5}},          // mm
      {{3, 7, 13}, {13}},          // batched matrix @ vector -> [3, 7]
      {{2, 3, 7, 13}, {13, 5}},    // batched @ matrix: folded into one mm
      {{13}, {3, 13, 5}},          // vector @ batched -> [3, 5]
      {{7, 13}, {3, 13, 5}},       // matrix @ batched -> [3, 7, 5]
      {{3, 7, 13}, {3, 13, 5}},    // bmm
      {{2, 1, 7, 13}, {3, 13, 5}}, // broadcast batches -> [2, 3, 7, 5]
      {{1, 7, 13}, {4, 13, 1}},    // broadcast a size-1 batch -> [4, 7, 1]
      {{1, 1}, {1, 1}},
  };
  uint64_t seed = 3300;
  for_each_cpu_variant_combination(kMatmulOps, [&] {
    for (DType dtype : kFloatDTypes)
      for (const auto& [sa, sb] : kCases)
        for (Layout la : {Layout::contiguous, Layout::transposed, Layout::stepped})
          for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::expanded_last}) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("shapes ", fmt::format("{} @ {}", sa, sb));
            INFO("layout a ", std::string(layout_name(la)));
            INFO("layout b ", std::string(layout_name(lb)));
            const Tensor a = make_input(sa, dtype, ++seed, la);
            const Tensor b = make_input(sb, dtype, ++seed, lb);
            const Tensor out = ts::matmul(a, b);
            const Ref want = ref_matmul(ref_of(a), ref_of(b));
            CHECK(out.shape() == want.shape);
            CHECK_CLOSE(out, want.v, tolerance_for(dtype), seed);
          }
  });
}

TEST_CASE("addmm: bias row, full matrix and broadcast inputs, alpha/beta, every cpu variant") {
  uint64_t seed = 3400;
  const double kAlphaBeta[][2] = {{1, 1}, {-0.5, 2}, {0, 1}, {1, 0}, {0.25, -1}};  // {beta, alpha}
  for_each_cpu_variant(&ts::ops::addmm, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const Mnk& s : kMnk)
        for (const Dims& c_shape : {Dims{s.N}, Dims{s.M, s.N}, Dims{1, s.N}, Dims{s.M, 1}, Dims{}})
          for (const auto& ab : kAlphaBeta)
            for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::stepped}) {
              const double beta = ab[0], alpha = ab[1];
              INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
              INFO("M N K ", s.M, " ", s.N, " ", s.K, " c ", fmt::format("{}", c_shape));
              CAPTURE(beta);
              CAPTURE(alpha);
              INFO("layout ", std::string(layout_name(layout)));
              const Tensor c = make_input(c_shape, dtype, ++seed, layout);
              const Tensor a = make_input({s.M, s.K}, dtype, ++seed, layout);
              const Tensor b = make_input({s.K, s.N}, dtype, ++seed, layout);
              const Tensor out = ts::addmm(c, a, b, beta, alpha);
              CHECK(out.shape() == Dims{s.M, s.N});
              CHECK_CLOSE(out, ref_addmm(ref_of(c), ref_of(a), ref_of(b), beta, alpha).v, tolerance_for(dtype), seed);
            }
  });
}

TEST_CASE("addmm: beta = 0 ignores NaN and Inf in the input, as BLAS and PyTorch do") {
  uint64_t seed = 3500;
  for_each_cpu_variant(&ts::ops::addmm, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes) {
      INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
      const Tensor a = make_input({7, 13}, dtype, ++seed);
      const Tensor b = make_input({13, 5}, dtype, ++seed);
      const Tensor nan_c = ts::full({7, 5}, std::numeric_limits<double>::quiet_NaN(), dtype);
      const Tensor inf_row = ts::full({5}, INFINITY, dtype);
      const std::vector<double> want = ref_matmul(ref_of(a), ref_of(b)).v;
      CHECK_CLOSE(ts::addmm(nan_c, a, b, 0, 1), want, tolerance_for(dtype), seed);
      CHECK_CLOSE(ts::addmm(inf_row, a, b, 0, 1), want, tolerance_for(dtype), seed);
      // With beta != 0 the NaN does reach the output.
      for (float v : values(ts::addmm(nan_c, a, b, 1, 1))) CHECK(std::isnan(v));
    }
  });
}

TEST_CASE("linear: 1-D, 2-D and 3-D inputs, with and without bias, every cpu variant") {
  struct LinearCase {
    Dims x;
    int64_t out;
  };
  const LinearCase kCases[] = {{{13}, 7}, {{7, 13}, 5}, {{1, 1}, 1}, {{31, 65}, 63}, {{2, 7, 13}, 31}, {{3, 1, 64}, 65}};
  uint64_t seed = 3600;
  for_each_cpu_variant_combination(kLinearOps, [&] {
    for (DType dtype : kFloatDTypes)
      for (const LinearCase& c : kCases)
        for (Layout lx : {Layout::contiguous, Layout::transposed, Layout::stepped})
          for (bool with_bias : {false, true}) {
            INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
            INFO("x ", fmt::format("{}", c.x), " out ", c.out);
            INFO("layout x ", std::string(layout_name(lx)));
            CAPTURE(with_bias);
            const int64_t in = c.x.back();
            const Tensor x = make_input(c.x, dtype, ++seed, lx);
            const Tensor w = make_input({c.out, in}, dtype, ++seed);
            const Tensor bias = with_bias ? make_input({c.out}, dtype, ++seed) : Tensor();
            const Ref rb = with_bias ? ref_of(bias) : Ref{};
            const Tensor y = ts::linear(x, w, bias);
            const Ref want = ref_linear(ref_of(x), ref_of(w), with_bias ? &rb : nullptr);
            CHECK(y.shape() == want.shape);
            CHECK_CLOSE(y, want.v, tolerance_for(dtype), seed);
          }
  });
  // A weight that is itself a view (tied embeddings: W = E.t() of another tensor) works too.
  const Tensor e = make_input({13, 7}, DType::f32, 3700);
  const Tensor x = make_input({5, 13}, DType::f32, 3701);
  CHECK_CLOSE(ts::linear(x, e.t()), ref_linear(ref_of(x), ref_of(e.t()), nullptr).v, tolerance_for(DType::f32), 3700);
}
