// ops/elementwise/elementwise.cpp: the front end and the ladders of add, sub,
// mul, div (tensor or scalar operand, broadcasting) and of the unary ops neg,
// exp, tanh, gelu, relu. The output is a fresh contiguous tensor of the
// broadcast shape and the inputs' dtype.
#include "ops/elementwise/elementwise.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ts {

namespace {

void prepare_binary(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& a = call.input(0);
  check_floating(call, a, "input");
  Dims shape = a.shape();
  if (call.in[1] != nullptr) {
    const Tensor& b = call.input(1);
    check_same_dtype(call, a, b);
    shape = broadcast_shapes(call, a.shape(), b.shape());
  }
  call.out = make_contiguous_tensor(shape, {a.dtype(), call.device}, call.op.name);
}

void prepare_unary(OpCall& call) {
  check_inputs_on_one_device(call);
  check_floating(call, call.input(0), "input");
  call.out = make_contiguous_tensor(call.input(0).shape(), {call.input(0).dtype(), call.device}, call.op.name);
}

// Every input read once, the output written once; one operation per output element.
Cost elementwise_cost(const OpCall& call) {
  double bytes = static_cast<double>(call.out.numel()) * static_cast<double>(call.out.element_size());
  for (const Tensor* x : call.tensor_args())
    if (x != nullptr) bytes += static_cast<double>(x->numel()) * static_cast<double>(x->element_size());
  return {static_cast<double>(call.out.numel()), bytes};
}

// PyTorch's profiler counts add and mul as one FLOP per element of the first input.
int64_t first_input_numel(const OpCall& call) { return call.input(0).numel(); }

// add.Tensor(self, other, alpha) and add.Scalar(self, other, alpha) record alpha last.
void binary_scalars_with_alpha(const OpCall& call, std::vector<double>& out) {
  const BinaryAttrs& attrs = call.attrs<BinaryAttrs>();
  if (attrs.scalar) out.push_back(*attrs.scalar);
  out.push_back(attrs.alpha);
}

void binary_scalars(const OpCall& call, std::vector<double>& out) {
  if (const auto& scalar = call.attrs<BinaryAttrs>().scalar) out.push_back(*scalar);
}

using enum VariantDevice;

// clang-format off
//  name                 op         device rung needs   summary                                                            supports                    run
const Variant add_rungs[] = {
  {"add/cpu/ref",        &ops::add, cpu,  0, no_gpu, "broadcasting strided loop, computed in f32",                        nullptr,                    run_kernel<&add_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"add/cuda/strided",   &ops::add, cuda, 1, sm75,   "a thread per element; any views and broadcasts (OffsetCalc)",      nullptr,                    run_kernel<&add_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"add/cuda/rows",      &ops::add, cuda, 2, sm75,   "16-byte packs; an operand may be a dense row repeated (a bias)",   elementwise_rows_supports,  run_kernel<&add_cuda_rows>, "ops/elementwise/elementwise_cuda_rows.cu"},
  {"add/cuda/vec16",     &ops::add, cuda, 3, sm75,   "dense operands: a thread per 16-byte pack",                        elementwise_vec16_supports, run_kernel<&add_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant sub_rungs[] = {
  {"sub/cpu/ref",        &ops::sub, cpu,  0, no_gpu, "broadcasting strided loop, computed in f32",                        nullptr,                    run_kernel<&sub_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"sub/cuda/strided",   &ops::sub, cuda, 1, sm75,   "a thread per element; any views and broadcasts (OffsetCalc)",      nullptr,                    run_kernel<&sub_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"sub/cuda/rows",      &ops::sub, cuda, 2, sm75,   "16-byte packs; an operand may be a dense row repeated (a bias)",   elementwise_rows_supports,  run_kernel<&sub_cuda_rows>, "ops/elementwise/elementwise_cuda_rows.cu"},
  {"sub/cuda/vec16",     &ops::sub, cuda, 3, sm75,   "dense operands: a thread per 16-byte pack",                        elementwise_vec16_supports, run_kernel<&sub_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant mul_rungs[] = {
  {"mul/cpu/ref",        &ops::mul, cpu,  0, no_gpu, "broadcasting strided loop, computed in f32",                        nullptr,                    run_kernel<&mul_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"mul/cuda/strided",   &ops::mul, cuda, 1, sm75,   "a thread per element; any views and broadcasts (OffsetCalc)",      nullptr,                    run_kernel<&mul_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"mul/cuda/rows",      &ops::mul, cuda, 2, sm75,   "16-byte packs; an operand may be a dense row repeated (a bias)",   elementwise_rows_supports,  run_kernel<&mul_cuda_rows>, "ops/elementwise/elementwise_cuda_rows.cu"},
  {"mul/cuda/vec16",     &ops::mul, cuda, 3, sm75,   "dense operands: a thread per 16-byte pack",                        elementwise_vec16_supports, run_kernel<&mul_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant div_rungs[] = {
  {"div/cpu/ref",        &ops::div, cpu,  0, no_gpu, "broadcasting strided loop, computed in f32",                        nullptr,                    run_kernel<&div_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"div/cuda/strided",   &ops::div, cuda, 1, sm75,   "a thread per element; any views and broadcasts (OffsetCalc)",      nullptr,                    run_kernel<&div_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"div/cuda/rows",      &ops::div, cuda, 2, sm75,   "16-byte packs; an operand may be a dense row repeated (a bias)",   elementwise_rows_supports,  run_kernel<&div_cuda_rows>, "ops/elementwise/elementwise_cuda_rows.cu"},
  {"div/cuda/vec16",     &ops::div, cuda, 3, sm75,   "dense operands: a thread per 16-byte pack",                        elementwise_vec16_supports, run_kernel<&div_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant neg_rungs[] = {
  {"neg/cpu/ref",        &ops::neg, cpu,  0, no_gpu, "strided loop",                                                      nullptr,                    run_kernel<&neg_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"neg/cuda/strided",   &ops::neg, cuda, 1, sm75,   "a thread per element, any strides",                                 nullptr,                    run_kernel<&neg_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"neg/cuda/vec16",     &ops::neg, cuda, 2, sm75,   "dense input: a thread per 16-byte pack",                            elementwise_vec16_supports, run_kernel<&neg_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant exp_rungs[] = {
  {"exp/cpu/ref",        &ops::exp, cpu,  0, no_gpu, "strided loop, std::exp in f32",                                     nullptr,                    run_kernel<&exp_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"exp/cuda/strided",   &ops::exp, cuda, 1, sm75,   "a thread per element, any strides",                                 nullptr,                    run_kernel<&exp_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"exp/cuda/vec16",     &ops::exp, cuda, 2, sm75,   "dense input: a thread per 16-byte pack",                            elementwise_vec16_supports, run_kernel<&exp_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant tanh_rungs[] = {
  {"tanh/cpu/ref",       &ops::tanh, cpu,  0, no_gpu, "strided loop, std::tanh in f32",                                   nullptr,                    run_kernel<&tanh_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"tanh/cuda/strided",  &ops::tanh, cuda, 1, sm75,   "a thread per element, any strides",                                nullptr,                    run_kernel<&tanh_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"tanh/cuda/vec16",    &ops::tanh, cuda, 2, sm75,   "dense input: a thread per 16-byte pack",                           elementwise_vec16_supports, run_kernel<&tanh_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant gelu_rungs[] = {
  {"gelu/cpu/ref",       &ops::gelu, cpu,  0, no_gpu, "strided loop; erf or tanh approximation in f32",                   nullptr,                    run_kernel<&gelu_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"gelu/cuda/strided",  &ops::gelu, cuda, 1, sm75,   "a thread per element, any strides",                                nullptr,                    run_kernel<&gelu_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"gelu/cuda/vec16",    &ops::gelu, cuda, 2, sm75,   "dense input: a thread per 16-byte pack",                           elementwise_vec16_supports, run_kernel<&gelu_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
const Variant relu_rungs[] = {
  {"relu/cpu/ref",       &ops::relu, cpu,  0, no_gpu, "strided loop",                                                     nullptr,                    run_kernel<&relu_cpu_ref>, "ops/elementwise/elementwise_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"relu/cuda/strided",  &ops::relu, cuda, 1, sm75,   "a thread per element, any strides",                                nullptr,                    run_kernel<&relu_cuda_strided>, "ops/elementwise/elementwise_cuda_strided.cu"},
  {"relu/cuda/vec16",    &ops::relu, cuda, 2, sm75,   "dense input: a thread per 16-byte pack",                           elementwise_vec16_supports, run_kernel<&relu_cuda_vec16>, "ops/elementwise/elementwise_cuda_vec16.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef add{.name = "ts::add", .attrs = attrs_tag<BinaryAttrs>, .prepare = prepare_binary, .rungs = add_rungs,
                .cost = elementwise_cost, .profiled_flops = first_input_numel, .scalar_args = binary_scalars_with_alpha};
const OpDef sub{.name = "ts::sub", .attrs = attrs_tag<BinaryAttrs>, .prepare = prepare_binary, .rungs = sub_rungs,
                .cost = elementwise_cost, .scalar_args = binary_scalars_with_alpha};
const OpDef mul{.name = "ts::mul", .attrs = attrs_tag<BinaryAttrs>, .prepare = prepare_binary, .rungs = mul_rungs,
                .cost = elementwise_cost, .profiled_flops = first_input_numel, .scalar_args = binary_scalars};
const OpDef div{.name = "ts::div", .attrs = attrs_tag<BinaryAttrs>, .prepare = prepare_binary, .rungs = div_rungs,
                .cost = elementwise_cost, .scalar_args = binary_scalars};
const OpDef neg{.name = "ts::neg", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_unary, .rungs = neg_rungs,
                .cost = elementwise_cost};
const OpDef exp{.name = "ts::exp", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_unary, .rungs = exp_rungs,
                .cost = elementwise_cost};
const OpDef tanh{.name = "ts::tanh", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_unary, .rungs = tanh_rungs,
                 .cost = elementwise_cost};
const OpDef gelu{.name = "ts::gelu", .attrs = attrs_tag<GeluAttrs>, .prepare = prepare_unary, .rungs = gelu_rungs,
                 .cost = elementwise_cost};
const OpDef relu{.name = "ts::relu", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_unary, .rungs = relu_rungs,
                 .cost = elementwise_cost};
}  // namespace ops

// Each public op fills its call and dispatches it (no shared helper: a debugger
// goes from the call site to the kernel in four frames).
Tensor add(const Tensor& a, const Tensor& b, double alpha, Where loc) {
  const BinaryAttrs attrs{.alpha = alpha, .scalar = std::nullopt};
  OpCall call(ops::add, attrs, loc, {&a, &b});
  return dispatch(call);
}

Tensor add(const Tensor& a, double b, Where loc) {
  const BinaryAttrs attrs{.scalar = b};
  OpCall call(ops::add, attrs, loc, {&a});
  return dispatch(call);
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha, Where loc) {
  const BinaryAttrs attrs{.alpha = alpha, .scalar = std::nullopt};
  OpCall call(ops::sub, attrs, loc, {&a, &b});
  return dispatch(call);
}

Tensor sub(const Tensor& a, double b, Where loc) {
  const BinaryAttrs attrs{.scalar = b};
  OpCall call(ops::sub, attrs, loc, {&a});
  return dispatch(call);
}

Tensor mul(const Tensor& a, const Tensor& b, Where loc) {
  const BinaryAttrs attrs;
  OpCall call(ops::mul, attrs, loc, {&a, &b});
  return dispatch(call);
}

Tensor mul(const Tensor& a, double b, Where loc) {
  const BinaryAttrs attrs{.scalar = b};
  OpCall call(ops::mul, attrs, loc, {&a});
  return dispatch(call);
}

Tensor div(const Tensor& a, const Tensor& b, Where loc) {
  const BinaryAttrs attrs;
  OpCall call(ops::div, attrs, loc, {&a, &b});
  return dispatch(call);
}

Tensor div(const Tensor& a, double b, Where loc) {
  const BinaryAttrs attrs{.scalar = b};
  OpCall call(ops::div, attrs, loc, {&a});
  return dispatch(call);
}

Tensor neg(const Tensor& x, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::neg, attrs, loc, {&x});
  return dispatch(call);
}

Tensor exp(const Tensor& x, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::exp, attrs, loc, {&x});
  return dispatch(call);
}

Tensor tanh(const Tensor& x, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::tanh, attrs, loc, {&x});
  return dispatch(call);
}

Tensor relu(const Tensor& x, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::relu, attrs, loc, {&x});
  return dispatch(call);
}

Tensor gelu(const Tensor& x, GeluApprox approximate, Where loc) {
  const GeluAttrs attrs{approximate};
  OpCall call(ops::gelu, attrs, loc, {&x});
  return dispatch(call);
}

}  // namespace ts
