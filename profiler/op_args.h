// profiler/op_args.h: what the profiler keeps about an op's arguments: shapes, dtypes, strides, scalars.
#pragma once

#include <vector>

#include "profiler/event.h"
#include "profiler/recorded_op.h"

namespace ts::profiler::detail {

// The op's arguments in PyTorch's order: its tensors (an absent optional one
// is `none`), then the scalars of its signature, e.g. add(a, b) records
// [a, b, alpha] like aten::add.Tensor, addmm(c, a, b) records [c, a, b, beta, alpha].
void record_inputs(const RecordedOp& op, std::vector<InputMeta>& out);

}  // namespace ts::profiler::detail
