// tests/test_tensor.cpp: tensor metadata, element access, dtype conversion, factories, printing.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "tensor/cuda_device.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;

namespace {

const DType kFloatDTypes[] = {DType::f32, DType::bf16, DType::f16};

}  // namespace

TEST_CASE("tensor: metadata of a fresh tensor") {
  const Tensor x = ts::zeros({2, 3, 4});
  CHECK(x.defined());
  CHECK(x.shape() == Dims{2, 3, 4});
  CHECK(x.strides() == Dims{12, 4, 1});
  CHECK(x.dim() == 3);
  CHECK(x.numel() == 24);
  CHECK(x.offset() == 0);
  CHECK(x.size(-1) == 4);
  CHECK(x.stride(0) == 12);
  CHECK(x.dtype() == DType::f32);
  CHECK(x.device() == ts::kCPU);
  CHECK(x.element_size() == 4);
  CHECK(x.is_contiguous());
  CHECK(x.storage()->nbytes() == 24 * 4);
  CHECK_FALSE(Tensor().defined());

  const Tensor scalar = ts::full({}, 2.5);
  CHECK(scalar.dim() == 0);
  CHECK(scalar.numel() == 1);
  CHECK(scalar.is_contiguous());
  CHECK(scalar.item<float>() == 2.5f);

  const Tensor empty = ts::empty({3, 0, 2});
  CHECK(empty.numel() == 0);
  CHECK(empty.is_contiguous());
  CHECK(empty.to_vector<float>().empty());
}

TEST_CASE("tensor: is_contiguous follows PyTorch's rules") {
  const Tensor x = ts::arange(24).view({2, 3, 4});
  CHECK(x.is_contiguous());
  CHECK_FALSE(x.transpose(0, 2).is_contiguous());
  CHECK_FALSE(x.slice(2, 0, 4, 2).is_contiguous());
  CHECK(x.narrow(0, 1, 1).is_contiguous());    // a leading slab is contiguous
  CHECK_FALSE(x.narrow(1, 1, 2).is_contiguous());  // a middle slab is not
  CHECK(x.select(0, 1).is_contiguous());
  CHECK_FALSE(x.select(2, 0).is_contiguous());
  // Size-1 dims may carry any stride.
  CHECK(x.as_strided({1, 4}, {1000, 1}, 0).is_contiguous());
  CHECK(x.unsqueeze(1).is_contiguous());
  // Stride 0 over more than one element is not contiguous; over one element it is.
  CHECK_FALSE(ts::ones({1, 4}).expand({3, 4}).is_contiguous());
  CHECK(ts::ones({1, 4}).expand({1, 4}).is_contiguous());
  // A transpose of a [n, 1] matrix is still contiguous.
  CHECK(ts::ones({5, 1}).t().is_contiguous());
}

TEST_CASE("tensor: item and to_vector convert and follow strides") {
  const Tensor x = ts::tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(x.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(x.t().to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(x.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  CHECK(x.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(x.select(1, 2).to_vector<float>() == std::vector<float>{3, 6});
  CHECK(x.select(0, 1).select(0, 2).item<float>() == 6.0f);
  CHECK(x[1][0].item<int64_t>() == 4);
  CHECK(ts::full({1, 1}, -1.5).item<double>() == -1.5);
  CHECK(ts::ones({1}, DType::b8).item<bool>());
  CHECK(ts::tensor({0, 2}, DType::b8).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK_THROWS_AS(x.item<float>(), ts::Error);
  CHECK_THROWS_AS(x.data<ts::bf16>(), ts::Error);
  CHECK(x.data<float>()[4] == 5.0f);
}

TEST_CASE("tensor: to(dtype) round trips") {
  const Tensor x = ts::tensor({1.0, -2.5, 0.1, 65504, 1e-3, 3.140625});
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    const Tensor y = x.to(dtype);
    CHECK(y.dtype() == dtype);
    CHECK(y.shape() == x.shape());
    CHECK((y.storage() == x.storage()) == (dtype == DType::f32));  // f32 -> f32 is the tensor itself
    // Every value becomes the nearest one of the dtype...
    const std::vector<float> got = y.to_vector<float>();
    const std::vector<float> src = x.to_vector<float>();
    for (size_t i = 0; i < src.size(); ++i) {
      const float want = dtype == DType::bf16  ? static_cast<float>(ts::bf16(src[i]))
                         : dtype == DType::f16 ? static_cast<float>(ts::f16(src[i]))
                                               : src[i];
      CHECK(got[i] == want);
    }
    // ...and going back to f32 and to the dtype again changes nothing.
    CHECK(y.to(DType::f32).to(dtype).to_vector<float>() == got);
    CHECK(y.to(dtype).storage() == y.storage());  // the same dtype: the same tensor
  }
  // Integer and bool conversions as C++ (and PyTorch) do them.
  CHECK(ts::tensor({1.75, -1.75, 0}).to(DType::i64).to_vector<int64_t>() == std::vector<int64_t>{1, -1, 0});
  CHECK(ts::tensor({0.5, 0, -2}).to(DType::b8).to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(ts::arange(4, DType::i64).to(DType::bf16).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  // A strided source converts through its strides.
  CHECK(x.slice(0, 0, 6, 2).to(DType::f16).to_vector<float>() ==
        std::vector<float>{1.0f, static_cast<float>(ts::f16(0.1f)), static_cast<float>(ts::f16(1e-3f))});
}

TEST_CASE("tensor: factories zeros/ones/full/arange/empty_like/zeros_like") {
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    CHECK(ts::zeros({2, 3}, dtype).to_vector<float>() == std::vector<float>(6, 0.0f));
    CHECK(ts::ones({4}, dtype).to_vector<float>() == std::vector<float>(4, 1.0f));
    CHECK(ts::full({3}, -0.5, dtype).to_vector<float>() == std::vector<float>(3, -0.5f));
    CHECK(ts::zeros({2}, dtype).dtype() == dtype);
  }
  CHECK(ts::arange(5).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(ts::arange(1, 2, 0.25).to_vector<float>() == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
  CHECK(ts::arange(3, 0, -1).to_vector<float>() == std::vector<float>{3, 2, 1});
  CHECK(ts::arange(0, 1, 0.3).numel() == 4);  // ceil((end - start) / step)
  CHECK(ts::arange(5, DType::i64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(ts::arange(2, 2).numel() == 0);
  CHECK_THROWS_AS(ts::arange(0, 1, 0), ts::Error);
  CHECK_THROWS_AS(ts::arange(0, 1, -1), ts::Error);
  CHECK_THROWS_AS(ts::zeros({2, -1}), ts::Error);

  const Tensor x = ts::ones({3, 2}, DType::bf16).t();
  const Tensor e = ts::empty_like(x);
  CHECK(e.shape() == Dims{2, 3});
  CHECK(e.dtype() == DType::bf16);
  CHECK(e.is_contiguous());
  CHECK(ts::zeros_like(x).to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(ts::tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}).shape() == Dims{2, 2, 2});
  CHECK(ts::from_vector(std::vector<int>{1, 2, 3, 4}, {2, 2}, DType::i64).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 2, 3, 4});
  CHECK_THROWS_AS(ts::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), ts::Error);
}

TEST_CASE("tensor: rand/randn are reproducible with manual_seed and differ after a reseed") {
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    ts::manual_seed(1234);
    const std::vector<float> a = ts::rand({257}, dtype).to_vector<float>();
    const std::vector<float> a_next = ts::rand({257}, dtype).to_vector<float>();
    ts::manual_seed(1234);
    const std::vector<float> b = ts::rand({257}, dtype).to_vector<float>();
    CHECK(a == b);
    CHECK(a != a_next);  // the generator advances
    ts::manual_seed(1235);
    CHECK(ts::rand({257}, dtype).to_vector<float>() != a);

    ts::manual_seed(99);
    const std::vector<float> n1 = ts::randn({3, 5}, dtype).to_vector<float>();
    ts::manual_seed(99);
    CHECK(ts::randn({3, 5}, dtype).to_vector<float>() == n1);
    ts::manual_seed(100);
    CHECK(ts::randn({3, 5}, dtype).to_vector<float>() != n1);
  }
  CHECK_THROWS_AS(ts::rand({2}, DType::i64), ts::Error);
}

TEST_CASE("tensor: rand gives 0 <= x < 1 in every float dtype") {
  // 100k draws: a value that rounds up to 1.0 (about one in 2^9 in bf16) shows up.
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    ts::manual_seed(7);
    const std::vector<float> v = ts::rand({100000}, dtype).to_vector<float>();
    float lo = 1, hi = 0;
    double mean = 0;
    for (float e : v) {
      lo = std::min(lo, e);
      hi = std::max(hi, e);
      mean += e;
    }
    mean /= static_cast<double>(v.size());
    CHECK(lo >= 0.0f);
    CHECK(hi < 1.0f);
    CHECK(mean == doctest::Approx(0.5).epsilon(0.02));
  }
}

TEST_CASE("tensor: randn has mean ~0 and std ~1 over 100k values") {
  for (DType dtype : kFloatDTypes) {
    INFO("dtype ", std::string(ts::dtype_short_name(dtype)));
    ts::manual_seed(42);
    const std::vector<double> v = ts::randn({100000}, dtype).to_vector<double>();
    double sum = 0, sum2 = 0;
    for (double e : v) {
      REQUIRE(std::isfinite(e));
      sum += e;
      sum2 += e * e;
    }
    const double n = static_cast<double>(v.size());
    const double mean = sum / n, std = std::sqrt(sum2 / n - mean * mean);
    CHECK(std::fabs(mean) < 0.02);
    CHECK(std::fabs(std - 1.0) < 0.02);
  }
}

TEST_CASE("tensor: printing follows PyTorch's format") {
  CHECK(ts::tensor({{1, 2}, {3, 4}}).str() == "tensor([[1., 2.],\n        [3., 4.]])");
  CHECK(ts::tensor({1.5, 2.25, -3}).str() == "tensor([ 1.5000,  2.2500, -3.0000])");
  CHECK(ts::tensor({1, 2}, DType::bf16).str() == "tensor([1., 2.], dtype=ts.bfloat16)");
  CHECK(ts::tensor({0.5}, DType::f16).str() == "tensor([0.5000], dtype=ts.float16)");
  CHECK(ts::full({}, 3.5).str() == "tensor(3.5000)");
  CHECK(ts::full({}, 7).str() == "tensor(7.)");
  CHECK(ts::arange(3, DType::i64).str() == "tensor([0, 1, 2])");
  CHECK(ts::tensor({1, 0}, DType::b8).str() == "tensor([ True, False])");
  CHECK(ts::tensor({1e-5, 1}).str() == "tensor([1.0000e-05, 1.0000e+00])");
  CHECK(ts::zeros({2, 0}).str() == "tensor([], size=(2, 0))");
  CHECK(ts::tensor({{{1, 2}}, {{3, 4}}}).str() == "tensor([[[1., 2.]],\n\n        [[3., 4.]]])");
  // Widths count only the finite nonzero values, as PyTorch's formatter does.
  CHECK(ts::tensor({{0, -INFINITY}, {0, 0}}).str() == "tensor([[0., -inf],\n        [0., 0.]])");
  CHECK(ts::tensor({1, NAN}).str() == "tensor([1., nan])");
  // Rows wrap at 80 columns.
  CHECK(ts::div(ts::arange(12), 8).str() ==
        "tensor([0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, 0.8750, 1.0000,\n"
        "        1.1250, 1.2500, 1.3750])");
  // A view prints its own elements.
  CHECK(ts::tensor({{1, 2}, {3, 4}}).t().str() == "tensor([[1., 3.],\n        [2., 4.]])");
}

TEST_CASE("tensor: printing summarises more than 1000 elements") {
  CHECK(ts::ones({40, 40}).str() ==
        "tensor([[1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        ...,\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.]])");
  CHECK(ts::arange(2000, DType::i64).str() == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  // Integer-valued floats spanning more than 1e3 switch to scientific notation.
  CHECK(ts::arange(2000).str() ==
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
        "        1.9990e+03])");
  // The format is chosen from the elements shown: the hidden middle does not widen it.
  Tensor x = ts::zeros({1001});
  ts::fill_(x, 1);
  Tensor middle = x.narrow(0, 500, 1);
  ts::fill_(middle, 123456);
  CHECK(x.str() == "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
}

TEST_CASE("tensor: cuda availability is reported without a crash") {
  // On a GPU-less machine every query answers; the reason names the problem.
  if (ts::cuda::is_available()) {
    CHECK(ts::cuda::device_count() > 0);
    CHECK(ts::cuda::unavailable_reason().empty());
  } else {
    CHECK(ts::cuda::device_count() == 0);
    CHECK_FALSE(ts::cuda::unavailable_reason().empty());
  }
}
