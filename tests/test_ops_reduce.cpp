// tests/test_ops_reduce.cpp: sum and max over a dim (keepdim, indices, ties, NaN).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tests/support/compare.h"
#include "tests/support/reference.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;
using namespace ts::testing;

namespace {

std::vector<float> values(const Tensor& x) { return x.to_vector<float>(); }

const Dims kShapes[] = {{1}, {7}, {13, 31}, {3, 63}, {2, 5, 65}, {65, 1, 3}};

}  // namespace

TEST_CASE("sum: hand-computed values, keepdim, 0-d") {
  const Tensor x = ts::tensor({{1, 2, 3}, {4, 5, 6}});
  for_each_cpu_variant(&ts::ops::sum, [&](const ts::Variant&) {
    CHECK(values(ts::sum(x, 0)) == std::vector<float>{5, 7, 9});
    CHECK(values(ts::sum(x, 1)) == std::vector<float>{6, 15});
    CHECK(values(ts::sum(x, -1)) == std::vector<float>{6, 15});
    CHECK(ts::sum(x, 0).shape() == Dims{3});
    CHECK(ts::sum(x, 0, true).shape() == Dims{1, 3});
    CHECK(ts::sum(x, 1, true).shape() == Dims{2, 1});
    CHECK(values(ts::sum(x.t(), 0)) == std::vector<float>{6, 15});
    CHECK(values(ts::sum(ts::tensor({1, 2, 3}), 0)) == std::vector<float>{6});
    CHECK(ts::sum(ts::tensor({1, 2, 3}), 0).dim() == 0);
    CHECK(ts::sum(ts::full({}, 4), 0).item<float>() == 4);
    CHECK(values(ts::sum(ts::zeros({2, 0}), 1)) == std::vector<float>{0, 0});  // an empty sum is 0
    CHECK(std::isnan(ts::sum(ts::tensor({1, NAN}), 0).item<float>()));
    CHECK(ts::sum(ts::tensor({1, INFINITY}), 0).item<float>() == INFINITY);
    CHECK(ts::sum(x.to(DType::bf16), 1).dtype() == DType::bf16);
  });
}

TEST_CASE("max: values and first indices, keepdim, ties, NaN") {
  const Tensor x = ts::tensor({{1, 7, 3, 7}, {9, 2, 9, -1}});
  for_each_cpu_variant(&ts::ops::max, [&](const ts::Variant&) {
    const auto [v1, i1] = ts::max(x, 1);
    CHECK(values(v1) == std::vector<float>{7, 9});
    CHECK(i1.to_vector<int64_t>() == std::vector<int64_t>{1, 0});  // the first of equal maxima
    CHECK(i1.dtype() == DType::i64);
    CHECK(v1.shape() == Dims{2});
    const auto [v0, i0] = ts::max(x, 0, true);
    CHECK(v0.shape() == Dims{1, 4});
    CHECK(i0.shape() == Dims{1, 4});
    CHECK(values(v0) == std::vector<float>{9, 7, 9, 7});
    CHECK(i0.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1, 0});
    // NaN wins and its first index is reported.
    const auto [vn, in] = ts::max(ts::tensor({{1, NAN, 5, NAN}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY}}), 1);
    const std::vector<float> vv = values(vn);
    CHECK(std::isnan(vv[0]));
    CHECK(vv[1] == -INFINITY);
    CHECK(in.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    const auto [vf, inf_i] = ts::max(ts::tensor({NAN, 3}), 0);
    CHECK(std::isnan(vf.item<float>()));
    CHECK(inf_i.item<int64_t>() == 0);
    // Strided input.
    const auto [vt, it] = ts::max(x.t(), 0);
    CHECK(values(vt) == std::vector<float>{7, 9});
    CHECK(it.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    // 0-d input: itself, index 0.
    const auto [vs, is] = ts::max(ts::full({}, -2), 0);
    CHECK(vs.item<float>() == -2);
    CHECK(is.item<int64_t>() == 0);
  });
}

TEST_CASE("sum: every cpu variant against float64, every dim, layout and dtype") {
  uint64_t seed = 2000;
  for_each_cpu_variant(&ts::ops::sum, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const Dims& shape : kShapes)
        for (Layout layout : kLayouts)
          for (int dim = 0; dim < shape.size(); ++dim)
            for (bool keepdim : {false, true}) {
              INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
              INFO("layout ", std::string(layout_name(layout)));
              CAPTURE(dim);
              CAPTURE(keepdim);
              const Tensor x = make_input(shape, dtype, ++seed, layout);
              const Tensor y = ts::sum(x, dim, keepdim);
              const Ref want = ref_sum(ref_of(x), dim, keepdim);
              CHECK(y.shape() == want.shape);
              CHECK(y.dtype() == dtype);
              CHECK_CLOSE(y, want.v, tolerance_for(dtype), seed);
            }
  });
}

TEST_CASE("max: every cpu variant against float64, every dim, layout and dtype") {
  uint64_t seed = 2100;
  for_each_cpu_variant(&ts::ops::max, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const Dims& shape : kShapes)
        for (Layout layout : kLayouts)
          for (int dim = 0; dim < shape.size(); ++dim)
            for (bool keepdim : {false, true}) {
              INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
              INFO("layout ", std::string(layout_name(layout)));
              CAPTURE(dim);
              CAPTURE(keepdim);
              const Tensor x = make_input(shape, dtype, ++seed, layout);
              const auto [values_out, indices] = ts::max(x, dim, keepdim);
              const auto [want, want_indices] = ref_max(ref_of(x), dim, keepdim);
              CHECK(values_out.shape() == want.shape);
              CHECK(indices.shape() == want.shape);
              // The max is one of the inputs: it must match exactly, and so must its index.
              CHECK(values_out.to_vector<double>() == want.v);
              CHECK(indices.to_vector<int64_t>() == want_indices);
            }
    // Ties everywhere (an expanded input repeats its row) keep the first index.
    const auto [tv, ti] = ts::max(ts::tensor({3, 1, 3}).expand({4, 3}), 0);
    CHECK(values(tv) == std::vector<float>{3, 1, 3});
    CHECK(ti.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0});
  });
}
