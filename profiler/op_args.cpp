// profiler/op_args.cpp: the record_shapes arguments and the with_flops counts of an op.
#include "profiler/op_args.h"

#include <algorithm>
#include <cmath>

#include "ops/registry.h"

namespace ts::profiler::detail {

void record_inputs(const OpCall& call, std::vector<InputMeta>& out) {
  out.reserve(static_cast<size_t>(call.num_in) + 2);
  for (int i = 0; i < call.num_in; ++i) {
    InputMeta m;
    if (const Tensor* t = call.in[static_cast<size_t>(i)]; t != nullptr && t->defined()) {
      m.kind = InputMeta::Kind::tensor;
      m.dtype = t->dtype();
      m.shape = t->shape();
      m.strides = t->strides();
    }
    out.push_back(m);
  }
  const auto scalar = [&](double value) {
    InputMeta m;
    m.kind = InputMeta::Kind::scalar;
    m.value = value;
    out.push_back(m);
  };
  switch (call.op) {
    case OpId::add:
    case OpId::sub:  // add.Tensor(self, other, alpha), add.Scalar(self, other, alpha)
      if (call.has_scalar) scalar(call.scalar);
      scalar(call.alpha);
      break;
    case OpId::mul:
    case OpId::div:
      if (call.has_scalar) scalar(call.scalar);
      break;
    case OpId::addmm:  // addmm(self, mat1, mat2, beta, alpha)
      scalar(call.beta);
      scalar(call.alpha);
      break;
    case OpId::fill_:
    case OpId::masked_fill:
    case OpId::masked_fill_:
      scalar(call.scalar);
      break;
    default:
      break;
  }
}

namespace {

// Product of the broadcast of a's and b's batch dims (all but the last two).
double broadcast_batch(const Dims& a, const Dims& b) {
  const int na = std::max(a.size() - 2, 0), nb = std::max(b.size() - 2, 0);
  double batch = 1;
  for (int i = 0; i < std::max(na, nb); ++i) {
    const int64_t da = i < na ? a[na - 1 - i] : 1;
    const int64_t db = i < nb ? b[nb - 1 - i] : 1;
    batch *= static_cast<double>(std::max(da, db));
  }
  return batch;
}

}  // namespace

int64_t op_flops(const OpCall& call) {
  switch (call.op) {
    case OpId::mm:
    case OpId::bmm:
    case OpId::addmm:
    case OpId::scaled_dot_product_attention:
      if (call.variant == nullptr || call.variant->cost == nullptr) return 0;
      return std::llround(call.variant->cost(call).flops);
    case OpId::matmul: {  // [..., M, K] @ [..., K, N]; a 1-D operand is one row / one column
      const Tensor& a = call.input(0);
      const Tensor& b = call.input(1);
      const double K = static_cast<double>(a.shape().back());
      const double M = a.dim() >= 2 ? static_cast<double>(a.shape()[a.dim() - 2]) : 1;
      const double N = b.dim() >= 2 ? static_cast<double>(b.shape().back()) : 1;
      return std::llround(2 * broadcast_batch(a.shape(), b.dim() >= 2 ? b.shape() : Dims{}) * M * N * K);
    }
    case OpId::linear: {  // x [*, in] @ W^T [in, out]
      const Tensor& x = call.input(0);
      return 2 * x.numel() * call.input(1).shape()[0];
    }
    case OpId::add:
    case OpId::mul:
      return call.input(0).numel();
    default:
      return 0;
  }
}

}  // namespace ts::profiler::detail
