// ops/softmax/softmax.h: softmax and _safe_softmax over one dim: their
// attributes, their OpDefs and the entry point of every kernel of their ladders.
//
//   rung 0  *_cpu_ref     softmax_cpu_ref.cpp     per row: max, sum of exp(x - max), divide: the oracle
//   rung 1  *_cuda_block  softmax_cuda_block.cu   a block per row, reductions through shared memory
//   rung 2  *_cuda_warp   softmax_cuda_warp.cu    a warp per row (<= 1024 elements), shuffles only
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct SoftmaxAttrs {
  int64_t dim = 0;  // prepare wraps a negative dim: kernels see 0 <= dim < x.dim() (or 0 for a 0-dim x)
};

namespace ops {
extern const OpDef softmax, _safe_softmax;  // SoftmaxAttrs
}  // namespace ops

// x [*] any strides, floating; out [*] contiguous, x's shape and dtype.
void softmax_cpu_ref(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out);
void safe_softmax_cpu_ref(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out);
void softmax_cuda_block(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out);
void safe_softmax_cuda_block(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out);
void softmax_cuda_warp(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out);
void safe_softmax_cuda_warp(const Tensor& x, const SoftmaxAttrs& attrs, Tensor& out);
bool softmax_cuda_warp_supports(const OpCall& call, std::string* why);  // rows of <= 1024 elements

}  // namespace ts
