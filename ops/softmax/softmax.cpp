// ops/softmax/softmax.cpp: the front end and ladders of softmax and
// _safe_softmax over one dim. The output is contiguous, of the input's shape
// and dtype.
#include "ops/softmax/softmax.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ts {

namespace {

void prepare_softmax(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  check_floating(call, x, "input");
  call.out = make_contiguous_tensor(x.shape(), {x.dtype(), call.device}, call.op.name);
}

Cost softmax_cost(const OpCall& call) {
  const double n = static_cast<double>(call.out.numel());
  // max, subtract, exp, sum, divide: about 5 operations per element; one read, one write.
  return {5 * n, 2 * n * static_cast<double>(call.out.element_size())};
}

using enum VariantDevice;

// clang-format off
const Variant softmax_rungs[] = {
  {"softmax/cpu/ref",             &ops::softmax,       cpu,  0, no_gpu, "per row: max, sum of exp(x - max) in double, divide", nullptr,                 run_kernel<&softmax_cpu_ref>, "ops/softmax/softmax_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"softmax/cuda/block",          &ops::softmax,       cuda, 1, sm75,   "a block per row; warp shuffles, then shared memory", nullptr,                    run_kernel<&softmax_cuda_block>, "ops/softmax/softmax_cuda_block.cu"},
  {"softmax/cuda/warp",           &ops::softmax,       cuda, 2, sm75,   "a warp per row (<= 1024): shuffles, no barrier",     softmax_cuda_warp_supports, run_kernel<&softmax_cuda_warp>, "ops/softmax/softmax_cuda_warp.cu"},
  {"softmax/cuda/warp_vec16",     &ops::softmax,       cuda, 3, sm75,   "the row in registers: 16-byte loads, one read and one write", softmax_cuda_warp_vec16_supports, run_kernel<&softmax_cuda_warp_vec16>, "ops/softmax/softmax_cuda_warp_vec16.cu"},
#endif
};
const Variant safe_softmax_rungs[] = {
  {"_safe_softmax/cpu/ref",       &ops::_safe_softmax, cpu,  0, no_gpu, "softmax, but an all -inf row gives 0 (not NaN)",    nullptr,                    run_kernel<&safe_softmax_cpu_ref>, "ops/softmax/softmax_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"_safe_softmax/cuda/block",    &ops::_safe_softmax, cuda, 1, sm75,   "the block rung; an all -inf row writes 0",          nullptr,                    run_kernel<&safe_softmax_cuda_block>, "ops/softmax/softmax_cuda_block.cu"},
  {"_safe_softmax/cuda/warp",     &ops::_safe_softmax, cuda, 2, sm75,   "the warp rung; an all -inf row writes 0",           softmax_cuda_warp_supports, run_kernel<&safe_softmax_cuda_warp>, "ops/softmax/softmax_cuda_warp.cu"},
  {"_safe_softmax/cuda/warp_vec16", &ops::_safe_softmax, cuda, 3, sm75,   "the warp_vec16 rung; an all -inf row writes 0",  softmax_cuda_warp_vec16_supports, run_kernel<&safe_softmax_cuda_warp_vec16>, "ops/softmax/softmax_cuda_warp_vec16.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef softmax{.name = "ts::softmax", .attrs = attrs_tag<SoftmaxAttrs>, .prepare = prepare_softmax,
                    .rungs = softmax_rungs, .cost = softmax_cost};
const OpDef _safe_softmax{.name = "ts::_safe_softmax", .attrs = attrs_tag<SoftmaxAttrs>, .prepare = prepare_softmax,
                          .rungs = safe_softmax_rungs, .cost = softmax_cost};
}  // namespace ops

Tensor softmax(const Tensor& x, int64_t dim, Where loc) {
  const SoftmaxAttrs attrs{x.defined() ? wrap_dim(dim, x.dim(), ops::softmax.name) : dim};
  OpCall call(ops::softmax, attrs, loc, {&x});
  return dispatch(call);
}

Tensor _safe_softmax(const Tensor& x, int64_t dim, Where loc) {
  const SoftmaxAttrs attrs{x.defined() ? wrap_dim(dim, x.dim(), ops::_safe_softmax.name) : dim};
  OpCall call(ops::_safe_softmax, attrs, loc, {&x});
  return dispatch(call);
}

}  // namespace ts
