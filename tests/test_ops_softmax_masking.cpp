// tests/test_ops_softmax_masking.cpp: softmax, _safe_softmax, masked_fill(_), where, triu, tril.
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

// A bool tensor of `shape` with about a third of the elements true, from a seed.
Tensor random_mask(const Dims& shape, uint64_t seed) {
  ts::manual_seed(seed);
  const std::vector<float> u = ts::rand(shape).to_vector<float>();
  std::vector<int64_t> bits(u.size());
  for (size_t i = 0; i < u.size(); ++i) bits[i] = u[i] < 0.33f ? 1 : 0;
  return ts::from_vector(bits, shape, DType::b8);
}

// Keep (i, j) of the last two dims when keep(j - i); the rest 0.
Ref ref_triangle(const Ref& x, bool upper, int64_t diagonal) {
  Ref out = x;
  const int n = x.shape.size();
  for (size_t i = 0; i < out.v.size(); ++i) {
    const Dims index = unravel(static_cast<int64_t>(i), x.shape);
    const int64_t d = index[n - 1] - index[n - 2];
    if (upper ? d < diagonal : d > diagonal) out.v[i] = 0;
  }
  return out;
}

}  // namespace

TEST_CASE("softmax: hand-computed values") {
  const Tensor x = ts::tensor({{1, 2, 3}, {0, 0, 0}});
  const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), s = e1 + e2 + e3;
  CHECK_CLOSE(ts::softmax(x, 1), (std::vector<double>{e1 / s, e2 / s, e3 / s, 1 / 3.0, 1 / 3.0, 1 / 3.0}), 1e-6, 0);
  CHECK_CLOSE(ts::softmax(x, 0),
              (std::vector<double>{e1 / (e1 + 1), e2 / (e2 + 1), e3 / (e3 + 1), 1 / (e1 + 1), 1 / (e2 + 1),
                                   1 / (e3 + 1)}),
              1e-6, 0);
  // Large values do not overflow: the row max is subtracted first.
  CHECK_CLOSE(ts::softmax(ts::tensor({1000, 1000}), 0), (std::vector<double>{0.5, 0.5}), 1e-6, 0);
  CHECK_CLOSE(ts::softmax(ts::tensor({0, -INFINITY}), 0), (std::vector<double>{1, 0}), 1e-6, 0);
  CHECK(values(ts::softmax(ts::full({}, 5), 0)) == std::vector<float>{1});
}

TEST_CASE("softmax: a fully -inf row gives NaN, _safe_softmax gives 0") {
  const Tensor x = ts::tensor({{-INFINITY, -INFINITY, -INFINITY}, {0, -INFINITY, 0}});
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    const Tensor xd = x.to(dtype);
    for_each_cpu_variant(&ts::ops::softmax, [&](const ts::Variant&) {
      const std::vector<float> p = values(ts::softmax(xd, -1));
      CHECK(std::isnan(p[0]));
      CHECK(std::isnan(p[1]));
      CHECK(std::isnan(p[2]));
      CHECK(p[3] == 0.5f);
      CHECK(p[4] == 0.0f);
      CHECK(p[5] == 0.5f);
    });
    for_each_cpu_variant(&ts::ops::_safe_softmax, [&](const ts::Variant&) {
      CHECK(values(ts::_safe_softmax(xd, -1)) == std::vector<float>{0, 0, 0, 0.5f, 0, 0.5f});
    });
  }
  // A NaN anywhere in a row makes the whole row NaN, in both.
  const Tensor n = ts::tensor({1, NAN, 2});
  for (float v : values(ts::softmax(n, 0))) CHECK(std::isnan(v));
  for (float v : values(ts::_safe_softmax(n, 0))) CHECK(std::isnan(v));
}

TEST_CASE("softmax and _safe_softmax: every cpu variant against float64, every dim and layout") {
  const Dims kShapes[] = {{1}, {7}, {13, 31}, {3, 63}, {2, 5, 65}, {65, 1, 3}};
  uint64_t seed = 1000;
  for (const ts::OpDef* op : {&ts::ops::softmax, &ts::ops::_safe_softmax}) {
    INFO("op ", std::string(op->name));
    for_each_cpu_variant(op, [&](const ts::Variant&) {
      for (DType dtype : kFloatDTypes)
        for (const Dims& shape : kShapes)
          for (Layout layout : kLayouts)
            for (int dim = -1; dim < shape.size(); ++dim) {
              INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
              INFO("layout ", std::string(layout_name(layout)));
              CAPTURE(dim);
              const Tensor x = make_input(shape, dtype, ++seed, layout, 3.0);
              const Tensor y = op == &ts::ops::softmax ? ts::softmax(x, dim) : ts::_safe_softmax(x, dim);
              CHECK(y.shape() == shape);
              CHECK(y.dtype() == dtype);
              const int d = dim < 0 ? dim + shape.size() : dim;
              CHECK_CLOSE(y, ref_softmax(ref_of(x), d, op == &ts::ops::_safe_softmax).v, tolerance_for(dtype), seed);
            }
    });
  }
  // Rows with some -inf (a masked score matrix) in every dtype.
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    const Tensor scores = make_input({13, 31}, dtype, 77, Layout::contiguous, 3.0);
    const Tensor masked = ts::masked_fill(scores, random_mask({13, 31}, 78), -INFINITY);
    CHECK_CLOSE(ts::_safe_softmax(masked, -1), ref_softmax(ref_of(masked), 1, true).v, tolerance_for(dtype), 77);
    CHECK_CLOSE(ts::softmax(masked, -1), ref_softmax(ref_of(masked), 1, false).v, tolerance_for(dtype), 77);
  }
}

TEST_CASE("masked_fill returns a new tensor, masked_fill_ writes in place") {
  const Tensor x = ts::tensor({{1, 2, 3}, {4, 5, 6}});
  const Tensor mask = ts::tensor({{1, 0, 0}, {0, 1, 1}}, DType::b8);
  for_each_cpu_variant(&ts::ops::masked_fill, [&](const ts::Variant&) {
    const Tensor y = ts::masked_fill(x, mask, -1);
    CHECK(values(y) == std::vector<float>{-1, 2, 3, 4, -1, -1});
    CHECK(y.storage() != x.storage());
    CHECK(values(x) == std::vector<float>{1, 2, 3, 4, 5, 6});  // untouched
  });
  for_each_cpu_variant(&ts::ops::masked_fill_, [&](const ts::Variant&) {
    Tensor z = ts::clone(x);
    const auto storage = z.storage();
    Tensor& r = ts::masked_fill_(z, mask, 9);
    CHECK(&r == &z);
    CHECK(r.storage() == storage);
    CHECK(values(z) == std::vector<float>{9, 2, 3, 4, 9, 9});
    // A broadcast mask (one row for every row) over a strided view writes through the view.
    Tensor base = ts::zeros({3, 4});
    Tensor view = base.t();  // [4, 3]
    ts::masked_fill_(view, ts::tensor({1, 0, 1}, DType::b8), 5);
    CHECK(values(base) == std::vector<float>{5, 5, 5, 5, 0, 0, 0, 0, 5, 5, 5, 5});
    // -inf and NaN fill values survive every dtype.
    for (DType dtype : kFloatDTypes) {
      Tensor h = ts::zeros({2}, dtype);
      ts::masked_fill_(h, ts::tensor({1, 0}, DType::b8), -INFINITY);
      CHECK(values(h) == std::vector<float>{-INFINITY, 0});
    }
  });
}

TEST_CASE("masked_fill: x and mask broadcast together as in PyTorch, masked_fill_ keeps x's shape") {
  const Tensor x = ts::tensor({1, 2, 3});
  const Tensor mask = ts::tensor({{1, 0, 0}, {0, 0, 1}}, DType::b8);
  for_each_cpu_variant(&ts::ops::masked_fill, [&](const ts::Variant&) {
    const Tensor y = ts::masked_fill(x, mask, 0);
    CHECK(y.shape() == Dims{2, 3});
    CHECK(values(y) == std::vector<float>{0, 2, 3, 1, 2, 0});
    CHECK(values(x) == std::vector<float>{1, 2, 3});
    const Tensor z = ts::masked_fill(ts::tensor({1, 2}).view({2, 1}), ts::tensor({0, 1, 1}, DType::b8), -1);
    CHECK(z.shape() == Dims{2, 3});
    CHECK(values(z) == std::vector<float>{1, -1, -1, 2, -1, -1});
  });
}

TEST_CASE("masked_fill: every cpu variant against float64, broadcast masks, every dtype") {
  uint64_t seed = 1100;
  const std::pair<Dims, Dims> kPairs[] = {{{7}, {7}},        {{13, 31}, {13, 31}}, {{13, 31}, {31}},
                                          {{2, 5, 65}, {5, 1}}, {{3, 63}, {}},        {{31}, {7, 31}},
                                          {{13, 1}, {13, 7}}};
  for_each_cpu_variant(&ts::ops::masked_fill, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const auto& [shape, mask_shape] : kPairs)
        for (Layout layout : kLayouts) {
          INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
          INFO("layout ", std::string(layout_name(layout)));
          const Tensor x = make_input(shape, dtype, ++seed, layout);
          const Tensor mask = random_mask(mask_shape, ++seed);
          const std::vector<double> before = x.to_vector<double>();
          const Tensor y = ts::masked_fill(x, mask, -2.5);
          const Ref want = ref_binary(ref_of(x), ref_of(mask), [](double v, double m) { return m != 0 ? -2.5 : v; });
          CHECK(y.shape() == want.shape);
          CHECK_CLOSE(y, want.v, tolerance_for(dtype), seed);
          CHECK(x.to_vector<double>() == before);
        }
  });
}

TEST_CASE("masked_fill_ on an expanded (stride-0) tensor throws") {
  Tensor e = ts::zeros({4}).expand({3, 4});
  CHECK_THROWS_WITH_AS(ts::masked_fill_(e, ts::ones({3, 4}, DType::b8), 1),
                       doctest::Contains("ts::masked_fill_: unsupported operation: more than one element"), ts::Error);
  // Out of place is fine: it writes a fresh clone.
  CHECK(values(ts::masked_fill(e, ts::tensor({1, 0, 0, 0}, DType::b8), 1)) ==
        std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0});
}

TEST_CASE("where: cond ? a : b with all three broadcast") {
  const Tensor cond = ts::tensor({1, 0}, DType::b8).view({2, 1});
  const Tensor a = ts::tensor({1, 2, 3}), b = ts::full({}, -1);
  const Tensor y = ts::where(cond, a, b);
  CHECK(y.shape() == Dims{2, 3});
  CHECK(values(y) == std::vector<float>{1, 2, 3, -1, -1, -1});
  CHECK(values(ts::where(ts::tensor({1, 0}, DType::b8), ts::tensor({NAN, NAN}), ts::tensor({5, 6})))[1] == 6);

  uint64_t seed = 1200;
  for_each_cpu_variant(&ts::ops::where, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (Layout layout : kLayouts) {
        INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
        INFO("layout ", std::string(layout_name(layout)));
        const Tensor c = random_mask({13, 1}, ++seed);
        const Tensor p = make_input({7, 13, 31}, dtype, ++seed, layout);
        const Tensor q = make_input({31}, dtype, ++seed, Layout::stepped);
        const Tensor out = ts::where(c, p, q);
        CHECK(out.shape() == Dims{7, 13, 31});
        const Ref pq = ref_binary(ref_of(p), ref_of(q), [](double u, double) { return u; });
        const Ref qq = ref_binary(ref_of(p), ref_of(q), [](double, double w) { return w; });
        Ref cc = ref_binary(ref_binary(ref_of(c), ref_of(p), [](double m, double) { return m; }), ref_of(q),
                            [](double m, double) { return m; });
        std::vector<double> want(pq.v.size());
        for (size_t i = 0; i < want.size(); ++i) want[i] = cc.v[i] != 0 ? pq.v[i] : qq.v[i];
        CHECK_CLOSE(out, want, tolerance_for(dtype), seed);
      }
  });
}

TEST_CASE("triu and tril: diagonals, batches, non-square and strided inputs") {
  const Tensor x = ts::arange(1, 13).view({3, 4});
  CHECK(values(ts::triu(x)) == std::vector<float>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  CHECK(values(ts::tril(x)) == std::vector<float>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  CHECK(values(ts::triu(x, 1)) == std::vector<float>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(values(ts::tril(x, -1)) == std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  CHECK(values(ts::triu(x, -1)) == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12});
  CHECK(values(ts::tril(x, 2)) == std::vector<float>{1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(values(ts::triu(x, 10)) == std::vector<float>(12, 0.0f));
  CHECK(values(ts::tril(x, -10)) == std::vector<float>(12, 0.0f));
  // The causal mask of attention: tril of ones, as bool.
  CHECK(ts::tril(ts::ones({2, 3}, DType::b8)).to_vector<bool>() ==
        std::vector<bool>{true, false, false, true, true, false});

  uint64_t seed = 1300;
  for (const ts::OpDef* op : {&ts::ops::triu, &ts::ops::tril}) {
    INFO("op ", std::string(op->name));
    for_each_cpu_variant(op, [&](const ts::Variant&) {
      for (DType dtype : kFloatDTypes)
        for (const Dims& shape : {Dims{1, 1}, Dims{7, 13}, Dims{13, 7}, Dims{3, 31, 31}, Dims{2, 2, 5, 65}})
          for (Layout layout : kLayouts)
            for (int64_t diagonal : {-3, -1, 0, 1, 5}) {
              INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
              INFO("layout ", std::string(layout_name(layout)));
              CAPTURE(diagonal);
              const Tensor in = make_input(shape, dtype, ++seed, layout);
              const Tensor out = op == &ts::ops::triu ? ts::triu(in, diagonal) : ts::tril(in, diagonal);
              CHECK(out.shape() == shape);
              CHECK_CLOSE(out, ref_triangle(ref_of(in), op == &ts::ops::triu, diagonal).v, tolerance_for(dtype), seed);
            }
    });
  }
}
