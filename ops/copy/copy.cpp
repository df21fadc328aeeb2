// ops/copy/copy.cpp: the front end and ladder of copy_, and the composites
// built on it: clone (empty_like + copy_), contiguous, to(dtype), to(device).
#include "ops/copy/copy.h"

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "tensor/cuda_device.h"

namespace ts {

namespace {

void prepare_copy(OpCall& call) {
  const Tensor& dst = call.input(0);
  const Tensor& src = call.input(1);
  TS_CHECK(dst.defined() && src.defined(), "copy_: expected defined tensors");
  check_device_available(dst.device(), call.op.name);
  check_device_available(src.device(), call.op.name);
  // A copy that touches a GPU runs on it (its variant owns the transfer).
  call.device = src.device().is_cuda() ? src.device() : dst.device();
  const Dims shape = broadcast_shapes(call, dst.shape(), src.shape());
  TS_CHECK(shape == dst.shape(), "copy_: the source of shape {} cannot be broadcast to the destination's shape {}",
           src.shape(), dst.shape());
  check_no_internal_overlap(call, dst);
  check_no_partial_overlap(call, dst, src);
  call.out = dst;
}

// clone and contiguous: the ops they call check the rest; the size of the copy is
// checked here, so that an error about it names the op the user called.
void prepare_composite(OpCall& call) {
  check_inputs_on_one_device(call);
  checked_nbytes(call.input(0).shape(), call.input(0).dtype(), call.op.name);
}

void prepare_to(OpCall& call) {
  check_inputs_on_one_device(call);
  const ToAttrs& attrs = call.attrs<ToAttrs>();
  check_device_available(attrs.device, "to");
  checked_nbytes(call.input(0).shape(), attrs.dtype, call.op.name);
}

// The destination written once, the source read once.
Cost copy_cost(const OpCall& call) {
  const Tensor& src = call.input(1);
  return {0, static_cast<double>(call.out.numel()) * static_cast<double>(call.out.element_size()) +
                 static_cast<double>(src.numel()) * static_cast<double>(src.element_size())};
}

using enum VariantDevice;

// clang-format off
const Variant copy__rungs[] = {
  {"copy_/cpu/ref",         &ops::copy_,      cpu,  0, no_gpu, "strided read, dtype conversion, broadcast; host to host",         copy_cpu_ref_supports,      run_kernel<&copy_cpu_ref>, "ops/copy/copy_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"copy_/cuda/strided",    &ops::copy_,      cuda, 1, sm75,   "on one GPU: a thread per element, strides and dtype converted",   copy_cuda_strided_supports, run_kernel<&copy_cuda_strided>, "ops/copy/copy_cuda.cu"},
  {"copy_/cuda/staged",     &ops::copy_,      cuda, 2, sm75,   "across the bus: bytes cross as they are, the GPU rearranges them", copy_cuda_staged_supports,  run_kernel<&copy_cuda_staged>, "ops/copy/copy_cuda.cu"},
  {"copy_/cuda/memcpy",     &ops::copy_,      cuda, 3, sm75,   "dense and alike: one cudaMemcpyAsync, any direction",             copy_cuda_memcpy_supports,  run_kernel<&copy_cuda_memcpy>, "ops/copy/copy_cuda.cu"},
#endif
};
const Variant clone_rungs[] = {
  {"clone/any/composite",   &ops::clone,      any,  0, no_gpu, "empty_like + copy_",                                              nullptr, run_kernel<&clone_composite>, "ops/copy/copy.cpp"},
};
const Variant contiguous_rungs[] = {
  {"contiguous/any/composite", &ops::contiguous, any, 0, no_gpu, "itself when already contiguous, else clone",                   nullptr, run_kernel<&contiguous_composite>, "ops/copy/copy.cpp"},
};
const Variant to_rungs[] = {
  {"to/any/composite",      &ops::to,         any,  0, no_gpu, "itself when nothing changes, else empty + copy_",                 nullptr, run_kernel<&to_composite>, "ops/copy/copy.cpp"},
};
// clang-format on

}  // namespace

namespace ops {
const OpDef copy_{.name = "ts::copy_", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_copy, .rungs = copy__rungs,
                  .cost = copy_cost};
const OpDef clone{.name = "ts::clone", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_composite,
                  .rungs = clone_rungs};
const OpDef contiguous{.name = "ts::contiguous", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_composite,
                       .rungs = contiguous_rungs};
const OpDef to{.name = "ts::to", .attrs = attrs_tag<ToAttrs>, .prepare = prepare_to, .rungs = to_rungs};
}  // namespace ops

Tensor& copy_(Tensor& dst, const Tensor& src, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::copy_, attrs, loc, {&dst, &src});
  dispatch(call);
  return dst;
}

Tensor clone(const Tensor& x, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::clone, attrs, loc, {&x});
  return dispatch(call);
}

void clone_composite(const Tensor& x, Tensor& out) {
  out = empty_like(x);
  copy_(out, x);
}

Tensor contiguous(const Tensor& x, Where loc) {
  if (x.defined() && x.is_contiguous()) return x;  // PyTorch returns self without recording an op here too
  const NoAttrs attrs;
  OpCall call(ops::contiguous, attrs, loc, {&x});
  return dispatch(call);
}

void contiguous_composite(const Tensor& x, Tensor& out) { out = clone(x); }

namespace {

Tensor to_impl(const Tensor& x, DType dtype, Device device, Where loc) {
  if (x.defined() && x.dtype() == dtype && x.device() == device) return x;  // nothing to do: the same tensor
  const ToAttrs attrs{dtype, device};
  OpCall call(ops::to, attrs, loc, {&x});
  return dispatch(call);
}

}  // namespace

Tensor to(const Tensor& x, DType dtype, Where loc) { return to_impl(x, dtype, x.device(), loc); }
Tensor to(const Tensor& x, Device device, Where loc) { return to_impl(x, x.dtype(), device, loc); }

void to_composite(const Tensor& x, const ToAttrs& attrs, Tensor& out) {
  out = empty(x.shape(), {attrs.dtype, attrs.device});
  copy_(out, x);
}

}  // namespace ts
