// profiler/op_args.h: what the profiler keeps about an op's arguments: shapes, dtypes, strides, scalars, FLOPs.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/op_call.h"
#include "profiler/event.h"

namespace ts::profiler::detail {

// The op's arguments in PyTorch's order: its tensors (an absent optional one
// is `none`), then the scalars of its signature, e.g. add(a, b) records
// [a, b, alpha] like aten::add.Tensor, addmm(c, a, b) records [c, a, b, beta, alpha].
void record_inputs(const OpCall& call, std::vector<InputMeta>& out);

// Floating-point operations of one call (a multiply-add counts 2), or 0 for
// ops that are not counted. GEMMs: 2*M*N*K (addmm counts the product only,
// as PyTorch does); matmul and linear count the GEMM they run; attention
// counts its two products; add and mul count one per element of their first
// input (PyTorch's formula). Called when the op ends, from its inputs.
int64_t op_flops(const OpCall& call);

}  // namespace ts::profiler::detail
