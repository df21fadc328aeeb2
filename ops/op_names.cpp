// ops/op_names.cpp: the profiler-facing name of every op.
#include <algorithm>
#include <cmath>

#include "ops/op_call.h"
#include "ops/registry.h"

namespace ts {

namespace {
#define TS_OP_FULL_NAME(name) "ts::" #name,
constexpr const char* kFullNames[] = {TS_FOR_EACH_OP(TS_OP_FULL_NAME)};
#undef TS_OP_FULL_NAME
}  // namespace

const char* op_name(OpId op) { return kFullNames[static_cast<int>(op)]; }
const char* op_short_name(OpId op) { return kFullNames[static_cast<int>(op)] + 4; }

const char* OpCall::name() const { return op_name(op); }
const char* OpCall::variant_name() const { return variant != nullptr ? variant->name : nullptr; }

void OpCall::scalar_args(std::vector<double>& out) const {
  switch (op) {
    case OpId::add:
    case OpId::sub:  // add.Tensor(self, other, alpha), add.Scalar(self, other, alpha)
      if (has_scalar) out.push_back(scalar);
      out.push_back(alpha);
      break;
    case OpId::mul:
    case OpId::div:
      if (has_scalar) out.push_back(scalar);
      break;
    case OpId::addmm:  // addmm(self, mat1, mat2, beta, alpha)
      out.push_back(beta);
      out.push_back(alpha);
      break;
    case OpId::fill_:
    case OpId::masked_fill:
    case OpId::masked_fill_:
      out.push_back(scalar);
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

int64_t OpCall::flops() const {
  const OpCall& call = *this;
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

}  // namespace ts
