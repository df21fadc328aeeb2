// tests/test_ops_edge_cases.cpp: inputs at the edges of the ops' arithmetic: sizes
// whose sums or products overflow int64, NaN and infinities where a conversion or a
// reduction could hide them, empty reductions under the composites.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/ops.h"
#include "tensor/error.h"

using doctest::Contains;
using ts::Tensor;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("edges: view bounds whose arithmetic would overflow int64 throw or stay exact") {
  // narrow: start + length would overflow; the check must not.
  CHECK_THROWS_WITH_AS(ts::ones({4}).narrow(0, 1, INT64_MAX), Contains("exceeds dimension size"), ts::Error);
  // slice: a huge step leaves one element (Python's rules), not a negative size.
  const Tensor s = ts::arange(5).slice(0, 1, 5, INT64_MAX - 1);
  CHECK(s.shape() == ts::Dims{1});
  CHECK(s.to_vector<float>() == std::vector<float>{1});
  // as_strided: an extent past int64 is refused, not wrapped into the storage.
  CHECK_THROWS_WITH_AS(ts::ones({4}).as_strided({3}, {(1LL << 62) + (1LL << 28)}, 0), Contains("as_strided"),
                       ts::Error);
  // expand: a negative size other than -1 is an error, not a shape [-2, -3].
  CHECK_THROWS_WITH_AS(ts::ones({1, 1}).expand({-2, -3}), Contains("negative"), ts::Error);
  CHECK(ts::ones({1, 1}).expand({-1, 3}).shape() == ts::Dims{1, 3});
}

TEST_CASE("edges: _safe_softmax zeroes only rows that are all -inf, and a NaN row stays NaN") {
  const Tensor x = ts::tensor({{-kInf, -kInf, -kInf}, {kNaN, -kInf, -kInf}, {kNaN, 1.0, 2.0}, {0.0, 0.0, -kInf}});
  for (bool safe : {true, false}) {
    INFO("safe ", safe);
    const std::vector<float> y = (safe ? ts::_safe_softmax(x, 1) : ts::softmax(x, 1)).to_vector<float>();
    for (int j = 0; j < 3; ++j) {
      if (safe) {
        CHECK(y[j] == 0.0f);  // every key masked: 0, not NaN
      } else {
        CHECK(std::isnan(y[j]));
      }
      CHECK(std::isnan(y[3 + j]));  // a NaN with -infs: NaN, never a silent zero row
      CHECK(std::isnan(y[6 + j]));  // a NaN with finite values: NaN
    }
    CHECK(y[9] == doctest::Approx(0.5));
    CHECK(y[10] == doctest::Approx(0.5));
    CHECK(y[11] == 0.0f);
  }
}

TEST_CASE("edges: matmul and linear with an empty contracted dim give zeros of the right shape") {
  const Tensor y = ts::matmul(ts::zeros({1, 1, 0}), ts::zeros({0, 2}));
  CHECK(y.shape() == ts::Dims{1, 1, 2});
  CHECK(y.to_vector<float>() == std::vector<float>(2, 0.0f));
  const Tensor z = ts::matmul(ts::zeros({3, 2, 0}), ts::zeros({3, 0, 4}));
  CHECK(z.shape() == ts::Dims{3, 2, 4});
  CHECK(z.to_vector<float>() == std::vector<float>(24, 0.0f));
  const Tensor l = ts::linear(ts::zeros({2, 3, 0}), ts::zeros({5, 0}), ts::ones({5}));
  CHECK(l.shape() == ts::Dims{2, 3, 5});
  CHECK(l.to_vector<float>() == std::vector<float>(30, 1.0f));  // the bias alone
}

TEST_CASE("edges: float to int64 conversions of NaN, infinities and huge values are defined") {
  // A tensor converted to int64 (to, copy_): NaN, infinities and values past the range
  // become INT64_MIN, as in PyTorch on x86 and CUDA.
  const Tensor x = ts::tensor({kNaN, kInf, -kInf, 1e30, -1e30, 3.9, -3.9});
  const std::vector<int64_t> got = ts::to(x, ts::DType::i64).to_vector<int64_t>();
  const std::vector<int64_t> want = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, 3, -3};
  CHECK(got == want);
  Tensor copied = ts::zeros({2}, {ts::DType::i64});
  ts::copy_(copied, ts::tensor({kNaN, 2.5}));
  CHECK(copied.to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN, 2});
}

TEST_CASE("edges: a scalar int64 cannot hold is refused by fill_, masked_fill and full, like PyTorch") {
  // A scalar written into an int64 tensor is checked instead: PyTorch's "value cannot be
  // converted to type int64_t without overflow", naming the op; the tensor is left as it was.
  Tensor i = ts::zeros({2}, {ts::DType::i64});
  CHECK_THROWS_WITH_AS(ts::fill_(i, kNaN),
                       Contains("fill_: value nan cannot be converted to type int64_t without overflow"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::fill_(i, 9.3e18), Contains("fill_: value 9.3e+18 cannot be converted"), ts::Error);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  const Tensor mask = ts::tensor({1, 0}, {ts::DType::b8});
  CHECK_THROWS_WITH_AS(ts::masked_fill_(i, mask, kInf), Contains("masked_fill_: value inf cannot be converted"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::masked_fill(i, mask, -kInf), Contains("masked_fill: value -inf cannot be converted"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::full({3}, kNaN, {ts::DType::i64}), Contains("full: value nan cannot be converted"),
                       ts::Error);
  // Values that fit are truncated toward zero, -2^63 included.
  ts::masked_fill_(i, mask, 7.5);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{7, 0});
  ts::fill_(i, -9223372036854775808.0);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN, INT64_MIN});
  // Other dtypes take any value: NaN stays NaN in floats and is true in bool.
  Tensor f = ts::zeros({1});
  ts::fill_(f, kNaN);
  CHECK(std::isnan(f.item<float>()));
  CHECK(ts::full({1}, kNaN, {ts::DType::b8}).item<bool>());
}

TEST_CASE("edges: arange refuses non-finite bounds and lengths past int64") {
  CHECK_THROWS_WITH_AS(ts::arange(0, kInf), Contains("finite"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(kNaN, 1), Contains("finite"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(0, 1e30), Contains("more than a tensor can hold"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(0, 5, -1), Contains("inconsistent"), ts::Error);
  CHECK(ts::arange(0, 5, 2).to_vector<float>() == std::vector<float>{0, 2, 4});
}
