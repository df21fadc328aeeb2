// tests/test_nn.cpp: geglu against float64, and the nn modules against compositions of reference math.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "nn/geglu_mlp.h"
#include "nn/linear.h"
#include "tests/support/compare.h"
#include "tests/support/reference.h"

using ts::DType;
using ts::Dims;
using ts::Tensor;
using namespace ts::testing;

namespace {

double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

// down(gelu_tanh(x gate^T) * (x up^T)) in double.
Ref ref_geglu_mlp(const Ref& x, const Ref& gate_w, const Ref& up_w, const Ref& down_w) {
  const Ref g = ref_unary(ref_matmul(x, ref_transpose_last2(gate_w)), gelu_tanh);
  const Ref u = ref_matmul(x, ref_transpose_last2(up_w));
  return ref_matmul(ref_binary(g, u, [](double a, double b) { return a * b; }), ref_transpose_last2(down_w));
}

}  // namespace

TEST_CASE("geglu: every cpu variant against float64, odd shapes and strided halves") {
  const std::vector<Dims> shapes = {{1}, {7}, {3, 13}, {5, 2, 31}, {4, 64}};
  uint64_t seed = 3000;
  for_each_cpu_variant(&ts::ops::geglu, [&](const ts::Variant&) {
    for (DType dtype : kFloatDTypes)
      for (const Dims& shape : shapes)
        for (Layout layout : kLayouts) {
          ++seed;
          INFO(ts::dtype_short_name(dtype), " ", fmt::format("{}", shape), " ", layout_name(layout));
          const Tensor gate = make_input(shape, dtype, seed, layout, 2.0);
          const Tensor up = make_input(shape, dtype, seed + 7919, layout);
          const Ref want = ref_binary(ref_unary(ref_of(gate), gelu_tanh), ref_of(up),
                                      [](double g, double u) { return g * u; });
          CHECK_CLOSE(ts::geglu(gate, up), want.v, tolerance_for(dtype), seed);
        }
  });
}

TEST_CASE("geglu: the two halves of one [rows, 2H] tensor, read in place") {
  const Tensor h = make_input({6, 2 * 24}, DType::f32, 77);
  const Tensor gate = ts::narrow(h, 1, 0, 24), up = ts::narrow(h, 1, 24, 24);
  CHECK(gate.storage() == h.storage());
  CHECK(up.strides() == Dims{48, 1});
  const Ref want = ref_binary(ref_unary(ref_of(gate), gelu_tanh), ref_of(up), [](double g, double u) { return g * u; });
  CHECK_CLOSE(ts::geglu(gate, up), want.v, tolerance_for(DType::f32), 77);
}

TEST_CASE("geglu: mismatched shapes and dtypes throw naming the op") {
  const Tensor a = ts::zeros({2, 3}), b = ts::zeros({2, 4}), c = ts::zeros({2, 3}, DType::bf16);
  CHECK_THROWS_WITH_AS(ts::geglu(a, b), doctest::Contains("geglu: gate and up must have the same shape"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::geglu(a, c), doctest::Contains("geglu"), ts::Error);
}

TEST_CASE("nn.Linear: forward is x W^T + b, with and without bias, 2-D and 3-D input") {
  ts::manual_seed(11);
  for (bool bias : {true, false}) {
    const ts::nn::Linear linear(32, 24, bias);
    CHECK(linear.parameters().size() == (bias ? 2u : 1u));
    CHECK(linear.weight().shape() == Dims{24, 32});
    // PyTorch's init: uniform in [-1/sqrt(in), 1/sqrt(in)).
    for (double w : linear.weight().to_vector<double>()) CHECK(std::fabs(w) <= 1 / std::sqrt(32.0));
    for (const Dims& shape : {Dims{5, 32}, Dims{3, 7, 32}}) {
      const Tensor x = make_input(shape, DType::f32, 12);
      Ref want = ref_matmul(ref_of(x), ref_transpose_last2(ref_of(linear.weight())));
      if (bias) want = ref_binary(want, ref_of(linear.bias()), [](double p, double b) { return p + b; });
      CHECK_CLOSE(linear.forward(x), want.v, tolerance_for(DType::f32), 12);
    }
  }
}

TEST_CASE("nn.GeGLUMLP: eager, fused, merged and epilogue compute the same function as the reference") {
  ts::manual_seed(21);
  for (DType dtype : kFloatDTypes) {
    ts::nn::GeGLUMLP mlp(48, 80, ts::nn::MlpPath::eager, dtype);
    // gate and up are the two row blocks of the merged weight: no copy between paths.
    CHECK(mlp.gate().weight().storage() == mlp.gate_up_weight().storage());
    CHECK(mlp.up().weight().offset() == 80 * 48);
    CHECK(mlp.parameters().size() == 3);
    const Tensor x = make_input({2, 5, 48}, dtype, 22);
    const Ref want = ref_geglu_mlp(ref_of(x), ref_of(mlp.gate().weight()), ref_of(mlp.up().weight()),
                                   ref_of(mlp.down().weight()));
    for (auto path : {ts::nn::MlpPath::eager, ts::nn::MlpPath::fused, ts::nn::MlpPath::merged,
                      ts::nn::MlpPath::epilogue}) {
      INFO(ts::nn::mlp_path_name(path), " ", ts::dtype_short_name(dtype));
      mlp.set_path(path);
      const Tensor y = mlp.forward(x);
      CHECK(y.shape() == Dims{2, 5, 48});
      // Three GEMMs and the elementwise middle each round to dtype once: twice the one-op tolerance.
      CHECK_CLOSE(y, want.v, 2 * tolerance_for(dtype), 22);
    }
  }
}

TEST_CASE("nn.GeGLUMLP: paths by name and their kernel counts") {
  CHECK(ts::nn::parse_mlp_path("merged") == ts::nn::MlpPath::merged);
  CHECK_THROWS_WITH_AS(ts::nn::parse_mlp_path("fast"), doctest::Contains("unknown path 'fast'"), ts::Error);
  CHECK(ts::nn::GeGLUMLP::kernels_per_forward(ts::nn::MlpPath::eager) == 5);
  CHECK(ts::nn::GeGLUMLP::kernels_per_forward(ts::nn::MlpPath::fused) == 4);
  CHECK(ts::nn::GeGLUMLP::kernels_per_forward(ts::nn::MlpPath::merged) == 3);
  CHECK(ts::nn::parse_mlp_path("epilogue") == ts::nn::MlpPath::epilogue);
  CHECK(ts::nn::GeGLUMLP::kernels_per_forward(ts::nn::MlpPath::epilogue) == 2);
  // Where linear_geglu's one-GEMM rung cannot run, its composite does: linear, then geglu.
  CHECK(ts::nn::GeGLUMLP::kernels_per_forward(ts::nn::MlpPath::epilogue, /*one_gemm=*/false) == 3);
}

TEST_CASE("ops.linear_geglu: the composite (linear, then geglu on the halves) and its checks") {
  ts::manual_seed(31);
  const Tensor x = make_input({3, 7, 24}, DType::f32, 32), w = make_input({2 * 10, 24}, DType::f32, 33);
  const Tensor h = ts::linear(x, w);
  const Tensor want = ts::geglu(ts::narrow(h, 2, 0, 10), ts::narrow(h, 2, 10, 10));
  const Tensor got = ts::linear_geglu(x, w);
  CHECK(got.shape() == Dims{3, 7, 10});
  CHECK_CLOSE(got, want.to_vector<double>(), 1e-6, 32);
  CHECK_THROWS_WITH_AS(ts::linear_geglu(x, make_input({9, 24}, DType::f32, 34)),
                       doctest::Contains("weight must be [2 * hidden, in_features]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::linear_geglu(x, make_input({20, 23}, DType::f32, 35)),
                       doctest::Contains("linear_geglu: x has 24 features but weight expects 23"), ts::Error);
}
