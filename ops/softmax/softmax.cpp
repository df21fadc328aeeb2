// ops/softmax/softmax.cpp: front end of softmax and _safe_softmax over one dim.
//
// Attributes used: dim. The output is contiguous, of the input's shape and dtype.
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

namespace ts {

namespace {

void prepare_softmax(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  check_floating(call, x, "input");
  call.dim = wrap_dim(call.dim, x.dim(), op_name(call.op));
  call.out = make_contiguous_tensor(x.shape(), {x.dtype(), call.device});
}

Tensor softmax_op(OpId op, const Tensor& x, int64_t dim, Where loc) {
  OpCall call(op, loc, {&x});
  call.dim = dim;
  return dispatch(call, prepare_softmax);
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, Where loc) { return softmax_op(OpId::softmax, x, dim, loc); }
Tensor _safe_softmax(const Tensor& x, int64_t dim, Where loc) { return softmax_op(OpId::_safe_softmax, x, dim, loc); }

Cost softmax_cost(const OpCall& call) {
  const double n = static_cast<double>(call.out.numel());
  // max, subtract, exp, sum, divide: about 5 operations per element; one read, one write.
  return {5 * n, 2 * n * static_cast<double>(call.out.element_size())};
}

}  // namespace ts
