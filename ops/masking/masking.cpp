// ops/masking/masking.cpp: front end of masked_fill, masked_fill_, where, triu, tril.
//
// masked_fill is out of place: it clones its input, then runs masked_fill_
// on the copy. That clone is the "hidden copy" kernel the attention lesson
// finds in the trace; calling masked_fill_ directly removes it.
// Attributes used: scalar (the fill value), dim (triu/tril's diagonal).
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

namespace ts {

namespace {

// The shape x and mask broadcast to; the mask must be bool.
Dims check_mask(const OpCall& call, const Tensor& x, const Tensor& mask) {
  TS_CHECK(mask.dtype() == DType::b8, "{}: expected a bool mask, got {} (mask shape {})", op_name(call.op),
           dtype_short_name(mask.dtype()), mask.shape());
  return broadcast_shapes(call, x.shape(), mask.shape());
}

// Out of place, x and mask broadcast together (the result may be larger than x), as in ATen.
void prepare_masked_fill(OpCall& call) {
  check_inputs_on_one_device(call);
  check_mask(call, call.input(0), call.input(1));
}

// In place, the mask must broadcast to x's own shape.
void prepare_masked_fill_(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  const Tensor& mask = call.input(1);
  TS_CHECK(check_mask(call, x, mask) == x.shape(),
           "{}: the mask of shape {} cannot be broadcast to the input's shape {}", op_name(call.op), mask.shape(),
           x.shape());
  check_no_internal_overlap(call, x);
  call.out = x;
}

void prepare_where(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& cond = call.input(0);
  const Tensor& a = call.input(1);
  const Tensor& b = call.input(2);
  TS_CHECK(cond.dtype() == DType::b8, "where: expected a bool condition, got {} (shape {})",
           dtype_short_name(cond.dtype()), cond.shape());
  check_same_dtype(call, a, b);
  const Dims shape = broadcast_shapes(call, broadcast_shapes(call, cond.shape(), a.shape()), b.shape());
  call.out = make_contiguous_tensor(shape, {a.dtype(), call.device});
}

void prepare_triangle(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  TS_CHECK(x.dim() >= 2, "{}: input tensor must have at least 2 dimensions, got shape {}", op_name(call.op),
           x.shape());
  call.out = make_contiguous_tensor(x.shape(), {x.dtype(), call.device});
}

Tensor triangle(OpId op, const Tensor& x, int64_t diagonal, Where loc) {
  OpCall call(op, loc, {&x});
  call.dim = diagonal;
  return dispatch(call, prepare_triangle);
}

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Where loc) {
  OpCall call(OpId::masked_fill, loc, {&x, &mask});
  call.scalar = value;
  return dispatch(call, prepare_masked_fill);
}

void masked_fill_composite(OpCall& call) {
  const Tensor& x = call.input(0);
  const Dims shape = broadcast_shapes(call, x.shape(), call.input(1).shape());
  call.out = clone(shape == x.shape() ? x : expand(x, shape, call.loc), call.loc);
  masked_fill_(call.out, call.input(1), call.scalar, call.loc);
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, double value, Where loc) {
  OpCall call(OpId::masked_fill_, loc, {&x, &mask});
  call.scalar = value;
  dispatch(call, prepare_masked_fill_);
  return x;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where loc) {
  OpCall call(OpId::where, loc, {&condition, &a, &b});
  return dispatch(call, prepare_where);
}

Tensor triu(const Tensor& x, int64_t diagonal, Where loc) { return triangle(OpId::triu, x, diagonal, loc); }
Tensor tril(const Tensor& x, int64_t diagonal, Where loc) { return triangle(OpId::tril, x, diagonal, loc); }

}  // namespace ts
