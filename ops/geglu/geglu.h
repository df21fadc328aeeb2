// ops/geglu/geglu.h: geglu(gate, up) = gelu_tanh(gate) * up: its OpDef and the
// entry point of every kernel of its ladder.
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

namespace ops {
extern const OpDef geglu;  // NoAttrs; inputs: gate, up
}  // namespace ops

// gate [*, H] and up [*, H]: equal shapes, one dtype, any strides; out [*, H] contiguous.
void geglu_cpu_ref(const Tensor& gate, const Tensor& up, Tensor& out);
void geglu_cuda_strided(const Tensor& gate, const Tensor& up, Tensor& out);
void geglu_cuda_rows(const Tensor& gate, const Tensor& up, Tensor& out);
bool geglu_cuda_rows_supports(const OpCall& call, std::string* why);  // rows of 16-byte aligned packs

}  // namespace ts
