// ops/matmul/matmul_gemm_cpu.h: one 2-D GEMM on host tensors, the unit the
// CPU mm/bmm/addmm variants are built from.
#pragma once

#include "tensor/tensor.h"

namespace ts {

// out [M, N] = beta * c + alpha * (a [M, K] @ b [K, N]); c is broadcast to
// [M, N] (or undefined: then beta is ignored). Any strides, f32/bf16/f16.
void gemm_cpu_ref(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta, Tensor& out);
void gemm_cpu_openblas(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta, Tensor& out);

// The [M, K] (or [K, N]) matrix `index` of a 3-D tensor, as a view (no dispatch).
Tensor batch_matrix(const Tensor& x, int64_t index);

}  // namespace ts
