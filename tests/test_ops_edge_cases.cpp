// tests/test_ops_edge_cases.cpp: inputs at the edges of the ops' arithmetic: sizes
// whose sums or products overflow int64, NaN and infinities where a conversion or a
// reduction could hide them, empty reductions under the composites.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/dispatch.h"
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

TEST_CASE("edges: a finite scalar past a floating dtype's range is refused by fill_, masked_fill and full, like PyTorch") {
  // PyTorch: "value cannot be converted to type at::Half without overflow"; inf and NaN are values.
  Tensor h = ts::zeros({2}, {ts::DType::f16});
  CHECK_THROWS_WITH_AS(ts::fill_(h, 65505), Contains("fill_: value 65505 cannot be converted to type f16 without overflow"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::fill_(h, -1e30), Contains("f16 holds magnitudes up to 65504"), ts::Error);
  CHECK(h.to_vector<float>() == std::vector<float>{0, 0});  // left as it was
  const Tensor mask = ts::tensor({1, 0}, {ts::DType::b8});
  CHECK_THROWS_WITH_AS(ts::masked_fill_(h, mask, -1e9), Contains("masked_fill_: value -1000000000 cannot be converted"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::masked_fill(h, mask, 7e4), Contains("masked_fill: value 70000 cannot be converted"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::full({3}, 1e39, {ts::DType::f32}), Contains("type f32 without overflow"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::full({3}, 3.4e38, {ts::DType::bf16}), Contains("type bf16 without overflow"), ts::Error);
  // The largest finite values themselves, infinities and NaN are written.
  ts::fill_(h, -65504);
  CHECK(h.to_vector<float>() == std::vector<float>{-65504, -65504});
  ts::masked_fill_(h, mask, -kInf);
  CHECK(std::isinf(h.to_vector<float>()[0]));
  CHECK(ts::full({1}, 3.4e38, {ts::DType::f32}).item<float>() == 3.4e38f);
  CHECK(ts::full({1}, 3.3895313892515355e38, {ts::DType::bf16}).item<float>() == 3.3895313892515355e38f);
  CHECK(std::isnan(ts::full({1}, kNaN, {ts::DType::f16}).item<float>()));
  // A tensor built from values converts them, as torch.tensor does: 1e30 becomes inf in f16.
  CHECK(std::isinf(ts::tensor({1e30}, {ts::DType::f16}).item<float>()));
}

TEST_CASE("edges: int64 arange is exact, and refuses a range past 2^53 off the doubles' grid instead of rounding it") {
  const double two53 = 9007199254740992.0;
  const int64_t top = int64_t{1} << 53;
  CHECK(ts::arange(two53 - 6, two53 + 2, 2, {ts::DType::i64}).to_vector<int64_t>() ==
        std::vector<int64_t>{top - 6, top - 4, top - 2, top});
  CHECK(ts::arange(two53 - 3, two53, 1, {ts::DType::i64}).to_vector<int64_t>() ==
        std::vector<int64_t>{top - 3, top - 2, top - 1});
  CHECK(ts::arange(-two53, -two53 + 3, 1, {ts::DType::i64}).to_vector<int64_t>().back() == -(int64_t{1} << 53) + 2);
  // 2^53 + 1 is no double: step 1 past 2^53 would repeat or skip values.
  CHECK_THROWS_WITH_AS(ts::arange(two53, two53 + 4, 1, {ts::DType::i64}),
                       Contains("are doubles 2 apart: start 9007199254740992 and step 1 must be multiples of 2"),
                       ts::Error);
  // Each bound within 2^53, but the span past it: refused too.
  CHECK_THROWS_WITH_AS(ts::arange(-two53, two53, 3, {ts::DType::i64}), Contains("past 2^53"), ts::Error);
  // Past 2^53 on the doubles' own grid the values are exact: step 2 from 2^53, step 1024 near 2^62.
  CHECK(ts::arange(two53, two53 + 6, 2, {ts::DType::i64}).to_vector<int64_t>() ==
        std::vector<int64_t>{top, top + 2, top + 4});
  CHECK(ts::arange(4611686018427387904.0, 4611686018427387904.0 + 2048, 1024, {ts::DType::i64}).to_vector<int64_t>() ==
        std::vector<int64_t>{int64_t{1} << 62, (int64_t{1} << 62) + 1024});
  // Floating dtypes round as they always do (PyTorch's arange computes them in double as well).
  CHECK(ts::arange(two53, two53 + 4, 2, {ts::DType::f32}).numel() == 2);
}

TEST_CASE("edges: integer arange is exact at any magnitude, as PyTorch's integer arange") {
  const int64_t top = int64_t{1} << 53;
  using I64s = std::vector<int64_t>;
  // PyTorch's integer arange on these bounds (docs/pytorch-reference/numerics_at_scale.out.txt):
  // arange(2^53, 2^53 + 5) and arange(2^62, 2^62 + 9, 3), every value exact. Step 1 past 2^53 is what
  // the floating form refuses (2^53 + 1 is no double).
  CHECK(ts::arange(top, top + 5, int64_t{1}, {ts::DType::i64}).to_vector<int64_t>() ==
        I64s{9007199254740992, 9007199254740993, 9007199254740994, 9007199254740995, 9007199254740996});
  const int64_t two62 = int64_t{1} << 62;
  CHECK(ts::arange(two62, two62 + 9, int64_t{3}, {ts::DType::i64}).to_vector<int64_t>() ==
        I64s{4611686018427387904, 4611686018427387907, 4611686018427387910});
  CHECK(ts::arange(INT64_MAX - 2, INT64_MAX, int64_t{1}, {ts::DType::i64}).to_vector<int64_t>() ==
        I64s{INT64_MAX - 2, INT64_MAX - 1});
  // Across the whole of int64, up and down: start + i * step would overflow an int64 product midway.
  CHECK(ts::arange(INT64_MIN, INT64_MAX, two62, {ts::DType::i64}).to_vector<int64_t>() ==
        I64s{INT64_MIN, -two62, 0, two62});
  CHECK(ts::arange(INT64_MAX, INT64_MIN, -two62, {ts::DType::i64}).to_vector<int64_t>() ==
        I64s{INT64_MAX, two62 - 1, -1, -two62 - 1});
  // The count is ceil((end - start) / step) in integers; size_t and int bounds mix.
  CHECK(ts::arange(0, 10, 3, {ts::DType::i64}).to_vector<int64_t>() == I64s{0, 3, 6, 9});
  CHECK(ts::arange(size_t{2}, 9u, 2, {ts::DType::i64}).to_vector<int64_t>() == I64s{2, 4, 6, 8});
  // Small integer bounds give what the floating form gives, in every dtype.
  for (ts::DType dtype : {ts::DType::f32, ts::DType::bf16, ts::DType::f16, ts::DType::i64}) {
    INFO(ts::dtype_short_name(dtype));
    CHECK(ts::arange(-7, 20, 3, {dtype}).to_vector<double>() ==
          ts::arange(-7.0, 20.0, 3.0, {dtype}).to_vector<double>());
  }
  // Into f32 each int64 rounds once to its nearest float: four values, all 2^53.
  CHECK(ts::arange(top, top + 4, int64_t{1}).to_vector<float>() == std::vector<float>(4, 9007199254740992.0f));
  CHECK_THROWS_WITH_AS(ts::arange(uint64_t{1} << 63),
                       Contains("the bound 9223372036854775808 cannot be converted to type int64_t"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(INT64_MIN, INT64_MAX), Contains("18446744073709551615 elements"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(0, 5, -1), Contains("inconsistent with step sign (0, 5, -1)"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(0, 5, 0), Contains("step must be nonzero"), ts::Error);
}

TEST_CASE("edges: arange refuses non-finite bounds and lengths past int64") {
  CHECK_THROWS_WITH_AS(ts::arange(0, kInf), Contains("finite"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(kNaN, 1), Contains("finite"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(0, 1e30), Contains("more than a tensor can hold"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::arange(0.0, 5.0, -1.0), Contains("inconsistent"), ts::Error);
  CHECK(ts::arange(0.0, 5.0, 2.0).to_vector<float>() == std::vector<float>{0, 2, 4});
}

// ---- numerics at scale: the CPU's reference rungs accumulate in double --------------------------
// An f32 running sum stops growing at 2^24 (2^24 + 1 rounds back to 2^24): each case below reads
// 2^24-ish where a single f32 accumulator is used, and the exact value here.

TEST_CASE("edges: sum over 2^25 elements on the CPU is exact where an f32 running sum stops at 2^24") {
  const int64_t n = int64_t{1} << 25;
  CHECK(ts::sum(ts::ones({n}), 0).item<float>() == 33554432.0f);  // PyTorch: 33554432
  // 0.1f, 2^24 times: the float64 value of that sum, rounded once to f32.
  const double tenth = static_cast<double>(0.1f);
  const float got = ts::sum(ts::full({n / 2}, 0.1), 0).item<float>();
  CHECK(got == static_cast<float>(tenth * static_cast<double>(n / 2)));
  // Along an inner dim too: rows of 2^24 + 2 ones (2^24 + 2 is an f32; 2^24 + 1 is not).
  const int64_t row = (int64_t{1} << 24) + 2;
  const std::vector<float> rows = ts::sum(ts::ones({2, row}), 1).to_vector<float>();
  CHECK(rows == std::vector<float>{16777218.0f, 16777218.0f});
}

TEST_CASE("edges: softmax over a row of 2^25 zeros sums to 1, each element 2^-25") {
  const int64_t n = int64_t{1} << 25;
  const std::vector<float> y = ts::softmax(ts::zeros({n}), 0).to_vector<float>();
  REQUIRE(static_cast<int64_t>(y.size()) == n);
  double total = 0;
  for (const float v : y) total += v;
  CHECK(y.front() == std::ldexp(1.0f, -25));
  CHECK(y.back() == std::ldexp(1.0f, -25));
  CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
  const std::vector<float> safe = ts::_safe_softmax(ts::zeros({1, n}), 1).to_vector<float>();
  CHECK(safe.front() == std::ldexp(1.0f, -25));
}

TEST_CASE("edges: mm/cpu/ref, the oracle, is exact over K = 2^25 where an f32 accumulator reads 2^24") {
  const int64_t k = int64_t{1} << 25;
  const ts::VariantOverride use("mm/cpu/ref");
  CHECK(ts::mm(ts::ones({1, k}), ts::ones({k, 1})).item<float>() == 33554432.0f);
}
