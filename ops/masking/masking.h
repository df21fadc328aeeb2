// ops/masking/masking.h: masked_fill, masked_fill_, where, triu, tril: their
// attributes, their OpDefs and the entry point of every kernel of their ladders.
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct MaskedFillAttrs {  // masked_fill, masked_fill_
  double value = 0;
};

struct TriangleAttrs {  // triu, tril: keep j - i >= diagonal (triu) or <= diagonal (tril)
  int64_t diagonal = 0;
};

namespace ops {
extern const OpDef masked_fill, masked_fill_;  // MaskedFillAttrs; inputs: x, mask
extern const OpDef where;                      // NoAttrs; inputs: condition, a, b
extern const OpDef triu, tril;                 // TriangleAttrs
}  // namespace ops

// x [*] any strides; mask bool, broadcastable to x (masked_fill: x and mask broadcast together).
void masked_fill_composite(const Tensor& x, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& out);
// In place: out is x itself, written where the mask is true.
void masked_fill__cpu_ref(const Tensor& x, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& out);
void masked_fill__cuda_naive(const Tensor& x, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& out);
// condition bool, a and b one dtype, all three broadcast; out contiguous, the broadcast shape.
void where_cpu_ref(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out);
void where_cuda_naive(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out);
// x [*, rows, cols] any strides; out contiguous, x's shape.
void triu_cpu_ref(const Tensor& x, const TriangleAttrs& attrs, Tensor& out);
void tril_cpu_ref(const Tensor& x, const TriangleAttrs& attrs, Tensor& out);
void triu_cuda_naive(const Tensor& x, const TriangleAttrs& attrs, Tensor& out);
void tril_cuda_naive(const Tensor& x, const TriangleAttrs& attrs, Tensor& out);

}  // namespace ts
