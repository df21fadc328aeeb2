// ops/checks.h: the input checks ops share, each throwing a ts::Error that names the op.
#pragma once

#include "ops/op.h"
#include "tensor/error.h"

namespace ts {

// Every input defined and on one device; sets call.device to it.
void check_inputs_on_one_device(OpCall& call);

// x.dtype() is f32, bf16 or f16.
void check_floating(const OpCall& call, const Tensor& x, const char* what);

// a and b share a dtype.
void check_same_dtype(const OpCall& call, const Tensor& a, const Tensor& b);

// The broadcast of two shapes (numpy/PyTorch rules), or a ts::Error naming op and shapes.
Dims broadcast_shapes(const OpCall& call, const Dims& a, const Dims& b);
Dims broadcast_shapes(const char* op_name, const Dims& a, const Dims& b);

// x's strides for reading it as if expanded to `shape` (0 on broadcast dims).
Dims broadcast_strides(const Tensor& x, const Dims& shape);

// In-place writes: `dst` must not have elements that share memory (an expanded
// tensor), and `src` must be either dst itself or not overlap dst at all.
void check_no_internal_overlap(const OpCall& call, const Tensor& dst);
void check_no_partial_overlap(const OpCall& call, const Tensor& dst, const Tensor& src);

}  // namespace ts
