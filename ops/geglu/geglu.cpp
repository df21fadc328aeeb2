// ops/geglu/geglu.cpp: front end of geglu(gate, up) = gelu_tanh(gate) * up.
//
// The GeGLU MLP's elementwise middle: in eager form it is two ops (ts::gelu,
// then ts::mul) and the [tokens, hidden] gelu result makes a round trip
// through memory; this op does both in one pass. gate and up may be strided
// views, e.g. the two halves of one merged GEMM's output [tokens, 2*hidden].
// Shapes: gate [*, H] and up [*, H] (equal shapes, one dtype) -> out [*, H], contiguous.
#include "ops/geglu/geglu.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ts {

namespace {

void prepare_geglu(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& gate = call.input(0);
  const Tensor& up = call.input(1);
  check_floating(call, gate, "gate");
  check_same_dtype(call, gate, up);
  TS_CHECK(gate.shape() == up.shape(), "geglu: gate and up must have the same shape, got {} and {}", gate.shape(),
           up.shape());
  call.out = make_contiguous_tensor(gate.shape(), {gate.dtype(), call.device}, call.op.name);
}

Cost geglu_cost(const OpCall& call) {
  const double n = static_cast<double>(call.out.numel());
  // Reads gate and up once, writes out once: 3 n elements. About 10 FLOPs per element (gelu + mul).
  return {10 * n, 3 * n * static_cast<double>(call.out.element_size())};
}

using enum VariantDevice;

// clang-format off
const Variant geglu_rungs[] = {
  {"geglu/cpu/ref",    &ops::geglu, cpu,  0, no_gpu, "gelu_tanh(gate) * up in one strided loop, f32",                  nullptr, run_kernel<&geglu_cpu_ref>, "ops/geglu/geglu_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"geglu/cuda/strided", &ops::geglu, cuda, 1, sm75,   "one pass, a thread per element: the gelu result never touches memory", nullptr, run_kernel<&geglu_cuda_strided>, "ops/geglu/geglu_cuda_fused.cu"},
  {"geglu/cuda/rows",  &ops::geglu, cuda, 2, sm75,   "the same pass over rows of 16-byte packs (any row stride)",         geglu_cuda_rows_supports, run_kernel<&geglu_cuda_rows>, "ops/geglu/geglu_cuda_fused.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef geglu{.name = "ts::geglu", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_geglu, .rungs = geglu_rungs,
                  .cost = geglu_cost};
}  // namespace ops

Tensor geglu(const Tensor& gate, const Tensor& up, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::geglu, attrs, loc, {&gate, &up});
  return dispatch(call);
}

}  // namespace ts
