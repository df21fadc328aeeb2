// ops/reduce/reduce.cpp: front end of sum and max over one dim.
//
// sum returns the input's dtype; max returns values (input dtype) in out and
// int64 indices in out2.
#include "ops/reduce/reduce.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

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
  const ReduceAttrs& attrs = call.attrs<ReduceAttrs>();
  TS_CHECK(&call.op != &ops::max || x.dim() == 0 || x.shape()[static_cast<int>(attrs.dim)] > 0,
           "max: expected reduction dim {} to have non-zero size (input shape {})", attrs.dim, x.shape());
  const Dims shape = reduced_shape(x.shape(), static_cast<int>(attrs.dim), attrs.keepdim);
  call.out = make_contiguous_tensor(shape, {x.dtype(), call.device}, call.op.name);
  if (&call.op == &ops::max) call.out2 = make_contiguous_tensor(shape, {DType::i64, call.device}, call.op.name);
}

// The input read once, the output written once; one operation per input element.
Cost reduce_cost(const OpCall& call) {
  const Tensor& x = call.input(0);
  return {static_cast<double>(x.numel()),
          static_cast<double>(x.numel()) * static_cast<double>(x.element_size()) +
              static_cast<double>(call.out.numel()) * static_cast<double>(call.out.element_size())};
}

// The dim wrapped against x's rank (kernels see 0 <= dim < x.dim(), or 0 for a 0-dim x).
ReduceAttrs wrapped(const Tensor& x, int64_t dim, bool keepdim, const char* op) {
  return {x.defined() ? wrap_dim(dim, x.dim(), op) : dim, keepdim};
}

using enum VariantDevice;

// clang-format off
const Variant sum_rungs[] = {
  {"sum/cpu/ref",     &ops::sum, cpu,  0, no_gpu, "per output element: a strided loop over dim, double accumulator", nullptr, run_kernel<&sum_cpu_ref>, "ops/reduce/reduce_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"sum/cuda/naive",  &ops::sum, cuda, 1, sm75,   "a warp per output element, shuffle-reduced f32 partials",     nullptr, run_kernel<&sum_cuda_naive>, "ops/reduce/reduce_cuda_naive.cu"},
#endif
};
const Variant max_rungs[] = {
  {"max/cpu/ref",     &ops::max, cpu,  0, no_gpu, "per output element: running max and its first index",         nullptr, run_kernel<&max_cpu_ref>, "ops/reduce/reduce_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"max/cuda/naive",  &ops::max, cuda, 1, sm75,   "a warp per output element; NaN wins, first index on ties",    nullptr, run_kernel<&max_cuda_naive>, "ops/reduce/reduce_cuda_naive.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef sum{.name = "ts::sum", .attrs = attrs_tag<ReduceAttrs>, .prepare = prepare_reduce, .rungs = sum_rungs,
                .cost = reduce_cost};
const OpDef max{.name = "ts::max", .attrs = attrs_tag<ReduceAttrs>, .prepare = prepare_reduce, .rungs = max_rungs,
                .cost = reduce_cost};
}  // namespace ops

Tensor sum(const Tensor& x, int64_t dim, bool keepdim, Where loc) {
  const ReduceAttrs attrs = wrapped(x, dim, keepdim, ops::sum.name);
  OpCall call(ops::sum, attrs, loc, {&x});
  return dispatch(call);
}

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim, Where loc) {
  const ReduceAttrs attrs = wrapped(x, dim, keepdim, ops::max.name);
  OpCall call(ops::max, attrs, loc, {&x});
  Tensor values = dispatch(call);
  return {std::move(values), std::move(call.out2)};
}

}  // namespace ts
