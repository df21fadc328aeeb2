// profiler/recorded_op.h: what the profiler may ask of an op while it records.
//
// The profiler sits below the ops: it knows no op by name or type. The
// dispatcher (ops/dispatch.cpp) opens an OpScope over an object that
// implements this interface (ts::OpCall), and the profiler asks it questions
// only while it records: an op that runs unprofiled builds none of the answers.
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace ts::profiler {

class RecordedOp {
 public:
  // "ts::add": the row of the table and the slice of the trace (static storage).
  virtual const char* name() const = 0;
  // record_shapes: the op's tensor arguments in its documented order; nullptr
  // (or an undefined tensor) for an absent optional one.
  virtual std::span<const Tensor* const> tensor_args() const = 0;
  // record_shapes: the scalars of the op's signature, in PyTorch's order, appended
  // after the tensors (add(a, b) records [a, b, alpha] like aten::add.Tensor).
  virtual void scalar_args(std::vector<double>& out) const = 0;
  // with_flops: the floating-point operations PyTorch counts for this call (a
  // multiply-add is 2), or 0 where PyTorch counts none. Asked when the op ends.
  virtual int64_t flops() const = 0;
  // The kernel variant that ran ("mm/cuda/cublas"), or nullptr when the op threw
  // before one was chosen. Asked when the op ends.
  virtual const char* variant_name() const = 0;
  // with_stack: the user's call site.
  virtual const std::source_location& call_site() const = 0;

 protected:
  ~RecordedOp() = default;
};

}  // namespace ts::profiler
