// ops/checks.h: the input checks ops share, each throwing a ts::Error that names the op.
#pragma once

#include "ops/op.h"
#include "tensor/error.h"

namespace ts {

// Every input defined and on one device that this process can use (a cuda tensor
// on a machine without a GPU fails here, naming the op); sets call.device to it.
void check_inputs_on_one_device(OpCall& call);

// A scalar the user writes into a tensor of `dtype` and `shape` (full, fill_,
// masked_fill; from_vector for i64): it must convert without overflow, as in PyTorch:
// for i64, fits_int64 (not NaN, not infinite, inside int64's range); for a floating
// dtype, a finite value no larger in magnitude than the dtype's largest (1e30 is not
// an f16; inf and NaN are). Converting a tensor (to, copy_) is not checked: NaN
// becomes INT64_MIN there, and 1e30 becomes inf in f16.
void check_fill_value(const char* op_name, double value, DType dtype, const Dims& shape);

// x.dtype() is f32, bf16 or f16.
void check_floating(const OpCall& call, const Tensor& x, const char* what);

// a and b share a dtype.
void check_same_dtype(const OpCall& call, const Tensor& a, const Tensor& b);

// The broadcast of two shapes (numpy/PyTorch rules), or a ts::Error naming op and shapes.
Dims broadcast_shapes(const OpCall& call, const Dims& a, const Dims& b);
Dims broadcast_shapes(const char* op_name, const Dims& a, const Dims& b);

// The period at which x repeats when read as if expanded to `shape`: shape's
// element count when x is dense of that shape, the row length when x is a dense
// row of shape's trailing dims (leading dims absent or 1, like a bias [N] under
// [M, N]), else 0. Element e of the expanded tensor is then x[e % period].
int64_t broadcast_period(const Tensor& x, const Dims& shape);

// x's strides for reading it as if expanded to `shape` (0 on broadcast dims).
Dims broadcast_strides(const Tensor& x, const Dims& shape);

// In-place writes: `dst` must not have elements that share memory (an expanded
// tensor), and `src` must be either dst itself or not overlap dst at all.
void check_no_internal_overlap(const OpCall& call, const Tensor& dst);
void check_no_partial_overlap(const OpCall& call, const Tensor& dst, const Tensor& src);

}  // namespace ts
