// ops/reduce/reduce.h: sum and max over one dim: their attributes, their OpDefs
// and the entry point of every kernel of their ladders.
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct ReduceAttrs {
  int64_t dim = 0;  // wrapped by the front end: 0 <= dim < x.dim() (0 for a 0-dim x)
  bool keepdim = false;
};

namespace ops {
extern const OpDef sum, max;  // ReduceAttrs
}  // namespace ops

// x [*] any strides, floating; out: x's shape without dim (size 1 there with keepdim), contiguous.
void sum_cpu_ref(const Tensor& x, const ReduceAttrs& attrs, Tensor& out);
void sum_cuda_naive(const Tensor& x, const ReduceAttrs& attrs, Tensor& out);
// values: as sum's out; indices: int64, the same shape (the first index of the max).
void max_cpu_ref(const Tensor& x, const ReduceAttrs& attrs, Tensor& values, Tensor& indices);
void max_cuda_naive(const Tensor& x, const ReduceAttrs& attrs, Tensor& values, Tensor& indices);

}  // namespace ts
