// ops/reduce/reduce.cpp: front end of sum and max over one dim.
//
// Attributes used: dim, keepdim. sum returns the input's dtype; max returns
// values (input dtype) in out and int64 indices in out2.
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

namespace ts {

namespace {

Dims reduced_shape(const Dims& shape, int dim, bool keepdim) {
  Dims out = shape;
  if (shape.empty()) return out;
  if (keepdim) {
    out[dim] = 1;
  } else {
    out.erase(dim);
  }
  return out;
}

void prepare_reduce(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  check_floating(call, x, "input");
  call.dim = wrap_dim(call.dim, x.dim(), op_name(call.op));
  TS_CHECK(call.op != OpId::max || x.dim() == 0 || x.shape()[static_cast<int>(call.dim)] > 0,
           "max: expected reduction dim {} to have non-zero size (input shape {})", call.dim, x.shape());
  const Dims shape = reduced_shape(x.shape(), static_cast<int>(call.dim), call.keepdim);
  call.out = make_contiguous_tensor(shape, {x.dtype(), call.device});
  if (call.op == OpId::max) call.out2 = make_contiguous_tensor(shape, {DType::i64, call.device});
}

}  // namespace

Tensor sum(const Tensor& x, int64_t dim, bool keepdim, Where loc) {
  OpCall call(OpId::sum, loc, {&x});
  call.dim = dim;
  call.keepdim = keepdim;
  return dispatch(call, prepare_reduce);
}

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim, Where loc) {
  OpCall call(OpId::max, loc, {&x});
  call.dim = dim;
  call.keepdim = keepdim;
  Tensor values = dispatch(call, prepare_reduce);
  return {std::move(values), std::move(call.out2)};
}

Cost reduce_cost(const OpCall& call) {
  const Tensor& x = call.input(0);
  return {static_cast<double>(x.numel()),
          static_cast<double>(x.numel() * x.element_size() + call.out.numel() * call.out.element_size())};
}

}  // namespace ts
