// ops/copy/copy.cpp: front end of fill_, copy_, and the composites built on
// copy_: clone (empty_like + copy_), contiguous, to(dtype), to(device).
//
// Attributes used: scalar (fill_), dtype and shape/device (to).
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"
#include "tensor/cuda_device.h"

namespace ts {

namespace {

void prepare_fill(OpCall& call) {
  check_inputs_on_one_device(call);
  check_no_internal_overlap(call, call.input(0));
  call.out = call.input(0);  // in place: the result is the input
}

void prepare_copy(OpCall& call) {
  const Tensor& dst = call.input(0);
  const Tensor& src = call.input(1);
  TS_CHECK(dst.defined() && src.defined(), "copy_: expected defined tensors");
  // A copy that touches a GPU runs on it (its variant owns the transfer).
  call.device = src.device().is_cuda() ? src.device() : dst.device();
  const Dims shape = broadcast_shapes(call, dst.shape(), src.shape());
  TS_CHECK(shape == dst.shape(), "copy_: the source of shape {} cannot be broadcast to the destination's shape {}",
           src.shape(), dst.shape());
  check_no_internal_overlap(call, dst);
  check_no_partial_overlap(call, dst, src);
  call.out = dst;
}

// Composites check nothing themselves: the ops they call do.
void prepare_composite(OpCall& call) { check_inputs_on_one_device(call); }

}  // namespace

Tensor& fill_(Tensor& x, double value, Where loc) {
  OpCall call(OpId::fill_, loc, {&x});
  call.scalar = value;
  dispatch(call, prepare_fill);
  return x;
}

Tensor& copy_(Tensor& dst, const Tensor& src, Where loc) {
  OpCall call(OpId::copy_, loc, {&dst, &src});
  dispatch(call, prepare_copy);
  return dst;
}

Tensor clone(const Tensor& x, Where loc) {
  OpCall call(OpId::clone, loc, {&x});
  return dispatch(call, prepare_composite);
}

void clone_composite(OpCall& call) {
  call.out = empty_like(call.input(0), call.loc);
  copy_(call.out, call.input(0), call.loc);
}

Tensor contiguous(const Tensor& x, Where loc) {
  if (x.is_contiguous()) return x;  // PyTorch returns self without recording an op here too
  OpCall call(OpId::contiguous, loc, {&x});
  return dispatch(call, prepare_composite);
}

void contiguous_composite(OpCall& call) { call.out = clone(call.input(0), call.loc); }

namespace {

void prepare_to(OpCall& call) {
  check_inputs_on_one_device(call);
  check_device_available(call.target, "to");
}

Tensor to_impl(const Tensor& x, DType dtype, Device device, Where loc) {
  if (x.dtype() == dtype && x.device() == device) return x;  // nothing to do: the same tensor
  OpCall call(OpId::to, loc, {&x});
  call.dtype = dtype;
  call.target = device;
  return dispatch(call, prepare_to);
}

}  // namespace

Tensor to(const Tensor& x, DType dtype, Where loc) { return to_impl(x, dtype, x.device(), loc); }
Tensor to(const Tensor& x, Device device, Where loc) { return to_impl(x, x.dtype(), device, loc); }

void to_composite(OpCall& call) {
  call.out = empty(call.input(0).shape(), {call.dtype, call.target}, call.loc);
  copy_(call.out, call.input(0), call.loc);
}

}  // namespace ts
