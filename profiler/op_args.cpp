// profiler/op_args.cpp: the record_shapes arguments of an op, as the op describes them.
#include "profiler/op_args.h"

namespace ts::profiler::detail {

void record_inputs(const RecordedOp& op, std::vector<InputMeta>& out) {
  const std::span<const Tensor* const> tensors = op.tensor_args();
  thread_local std::vector<double> scalars;  // reused: no allocation per recorded op
  scalars.clear();
  op.scalar_args(scalars);
  // No reserve(out.size() + n) here: reserving exactly what each op adds defeats the vector's
  // geometric growth, and the recording's cost per op would grow with its length.
  for (const Tensor* t : tensors) {
    InputMeta m;
    if (t != nullptr && t->defined()) {
      m.kind = InputMeta::Kind::tensor;
      m.dtype = t->dtype();
      m.shape = t->shape();
      m.strides = t->strides();
    }
    out.push_back(m);
  }
  for (double value : scalars) {
    InputMeta m;
    m.kind = InputMeta::Kind::scalar;
    m.value = value;
    out.push_back(m);
  }
}

}  // namespace ts::profiler::detail
