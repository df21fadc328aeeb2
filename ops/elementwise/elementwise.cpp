// ops/elementwise/elementwise.cpp: front end of add, sub, mul, div (tensor or
// scalar operand, broadcasting) and of the unary ops neg, exp, tanh, gelu, relu.
//
// Attributes used: alpha (add/sub), scalar + has_scalar (scalar operand),
// approximate (gelu). The output is a fresh contiguous tensor of the
// broadcast shape and the inputs' dtype.
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

namespace ts {

namespace {

void prepare_binary(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& a = call.input(0);
  check_floating(call, a, "input");
  Dims shape = a.shape();
  if (!call.has_scalar) {
    const Tensor& b = call.input(1);
    check_same_dtype(call, a, b);
    shape = broadcast_shapes(call, a.shape(), b.shape());
  }
  call.out = make_contiguous_tensor(shape, {a.dtype(), call.device});
}

void prepare_unary(OpCall& call) {
  check_inputs_on_one_device(call);
  check_floating(call, call.input(0), "input");
  call.out = make_contiguous_tensor(call.input(0).shape(), {call.input(0).dtype(), call.device});
}

Tensor binary(OpId op, const Tensor& a, const Tensor& b, double alpha, Where loc) {
  OpCall call(op, loc, {&a, &b});
  call.alpha = alpha;
  return dispatch(call, prepare_binary);
}

Tensor binary_scalar(OpId op, const Tensor& a, double b, Where loc) {
  OpCall call(op, loc, {&a});
  call.scalar = b;
  call.has_scalar = true;
  return dispatch(call, prepare_binary);
}

Tensor unary(OpId op, const Tensor& x, Where loc, GeluApprox approximate = GeluApprox::none) {
  OpCall call(op, loc, {&x});
  call.approximate = approximate;
  return dispatch(call, prepare_unary);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha, Where loc) { return binary(OpId::add, a, b, alpha, loc); }
Tensor add(const Tensor& a, double b, Where loc) { return binary_scalar(OpId::add, a, b, loc); }
Tensor sub(const Tensor& a, const Tensor& b, double alpha, Where loc) { return binary(OpId::sub, a, b, alpha, loc); }
Tensor sub(const Tensor& a, double b, Where loc) { return binary_scalar(OpId::sub, a, b, loc); }
Tensor mul(const Tensor& a, const Tensor& b, Where loc) { return binary(OpId::mul, a, b, 1, loc); }
Tensor mul(const Tensor& a, double b, Where loc) { return binary_scalar(OpId::mul, a, b, loc); }
Tensor div(const Tensor& a, const Tensor& b, Where loc) { return binary(OpId::div, a, b, 1, loc); }
Tensor div(const Tensor& a, double b, Where loc) { return binary_scalar(OpId::div, a, b, loc); }
Tensor neg(const Tensor& x, Where loc) { return unary(OpId::neg, x, loc); }
Tensor exp(const Tensor& x, Where loc) { return unary(OpId::exp, x, loc); }
Tensor tanh(const Tensor& x, Where loc) { return unary(OpId::tanh, x, loc); }
Tensor gelu(const Tensor& x, GeluApprox approximate, Where loc) { return unary(OpId::gelu, x, loc, approximate); }
Tensor relu(const Tensor& x, Where loc) { return unary(OpId::relu, x, loc); }

Cost elementwise_cost(const OpCall& call) {
  const double n = static_cast<double>(call.out.numel());
  double bytes = n * static_cast<double>(call.out.element_size());
  for (int i = 0; i < call.num_in; ++i)
    if (call.in[i]) bytes += static_cast<double>(call.in[i]->numel() * call.in[i]->element_size());
  return {n, bytes};
}

}  // namespace ts
