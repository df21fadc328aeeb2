// ops/matmul/matmul_cuda.h: one (batched) GEMM as the hand-written CUDA rungs see it.
//
//   out[z] = beta * C + alpha * (A[z] @ B[z])   for z < batch
//   A [M, K], B [K, N], out [M, N]; C broadcast to [M, N] (or absent).
// Every operand is a pointer plus element strides, so t() views and
// broadcasts are read in place. mm is batch 1, bmm batches over dim 0, addmm
// adds C. Plain data: it is passed to kernels by value.
#pragma once

#include <cstdint>

#include "ops/checks.h"
#include "ops/op.h"

namespace ts {

struct GemmProblem {
  int64_t M = 0, N = 0, K = 0, batch = 1;
  const void* a = nullptr;
  int64_t a_batch = 0, a_row = 0, a_col = 0;  // element strides
  const void* b = nullptr;
  int64_t b_batch = 0, b_row = 0, b_col = 0;
  const void* c = nullptr;  // nullptr: no C term
  int64_t c_row = 0, c_col = 0;  // 0 on broadcast dims
  void* out = nullptr;
  int64_t out_batch = 0, out_row = 0, out_col = 0;
  float alpha = 1, beta = 0;
};

// The problem of an mm or bmm (c null), or of an addmm (c its C, beta and alpha its scalars).
inline GemmProblem gemm_problem(const Tensor& a, const Tensor& b, const Tensor* c, double beta, double alpha,
                                Tensor& out) {
  GemmProblem p;
  const bool batched = a.dim() == 3;
  const int o = batched ? 1 : 0;  // index of the row dim
  p.batch = batched ? a.shape()[0] : 1;
  p.M = a.shape()[o];
  p.K = a.shape()[o + 1];
  p.N = b.shape()[o + 1];
  p.a = a.data_ptr();
  p.a_batch = batched ? a.strides()[0] : 0;
  p.a_row = a.strides()[o];
  p.a_col = a.strides()[o + 1];
  p.b = b.data_ptr();
  p.b_batch = batched ? b.strides()[0] : 0;
  p.b_row = b.strides()[o];
  p.b_col = b.strides()[o + 1];
  p.out = out.data_ptr();
  p.out_batch = batched ? out.strides()[0] : 0;
  p.out_row = out.strides()[o];
  p.out_col = out.strides()[o + 1];
  if (c != nullptr) {
    p.alpha = static_cast<float>(alpha);
    p.beta = static_cast<float>(beta);
    if (beta != 0) {  // beta == 0 ignores C entirely (a NaN in C does not leak), as on the CPU
      const Dims cs = broadcast_strides(*c, out.shape());
      p.c = c->data_ptr();
      p.c_row = cs[0];
      p.c_col = cs[1];
    }
  }
  return p;
}

}  // namespace ts
