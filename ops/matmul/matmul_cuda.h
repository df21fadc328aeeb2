// ops/matmul/matmul_cuda.h: one (batched) GEMM as the hand-written CUDA rungs see it.
//
//   out[z] = beta * C + alpha * (A[z] @ B[z])   for z < batch
//   A [M, K], B [K, N], out [M, N]; C broadcast to [M, N] (or absent).
// Every operand is a pointer plus element strides, so t() views and
// broadcasts are read in place. mm is batch 1, bmm batches over dim 0, addmm
// adds C. Plain data: it is passed to kernels by value.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/checks.h"
#include "ops/matmul/matmul.h"
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

// The operands of an mm/bmm/addmm call as a GemmProblem (no out, no C): what the rungs' supports() read.
inline GemmProblem gemm_operands(const Tensor& a, const Tensor& b) {
  GemmProblem p;
  const int o = a.dim() - 2;
  p.batch = a.dim() == 3 ? a.shape()[0] : 1;
  p.M = a.shape()[o];
  p.K = a.shape()[o + 1];
  p.N = b.shape()[o + 1];
  p.a = a.data_ptr();
  p.a_batch = a.dim() == 3 ? a.strides()[0] : 0;
  p.a_row = a.strides()[o];
  p.a_col = a.strides()[o + 1];
  p.b = b.data_ptr();
  p.b_batch = b.dim() == 3 ? b.strides()[0] : 0;
  p.b_row = b.strides()[o];
  p.b_col = b.strides()[o + 1];
  return p;
}

// The operands the tensor-core rungs (mma.sync, wgmma) read in place, elements of 2 bytes:
// A with unit column stride; B with unit stride in N (rows of K) or in K (a t() view); the
// other strides and both bases 16-byte aligned (cp.async and TMA move 16-byte chunks); no empty
// product (left to the plain rungs) and sizes within the kernels' 32-bit tile indices. False,
// and why, otherwise.
inline bool tensor_core_operands_ok(const GemmProblem& g, std::string* why) {
  if (g.M == 0 || g.N == 0 || g.K == 0 || g.batch == 0) {
    if (why) *why = fmt::format("an empty product (M={}, N={}, K={}, batch={}) is left to the plain rungs", g.M, g.N, g.K, g.batch);
    return false;
  }
  if (std::max({g.M, g.N, g.K, g.batch}) > (int64_t{1} << 30)) {
    if (why) *why = fmt::format("sizes past the kernels' 32-bit tile indices (M={}, N={}, K={}, batch={})", g.M, g.N, g.K, g.batch);
    return false;
  }
  auto aligned = [](const void* base, int64_t s1, int64_t s2) {
    return reinterpret_cast<uintptr_t>(base) % 16 == 0 && (s1 * 2) % 16 == 0 && (s2 * 2) % 16 == 0;
  };
  if (g.a_col != 1 || !aligned(g.a, g.a_row, g.a_batch)) {
    if (why)
      *why = fmt::format("A must have unit column stride and 16-byte aligned rows and base (A strides: row {}, column {})",
                         g.a_row, g.a_col);
    return false;
  }
  const bool rows_of_k = g.b_col == 1 && aligned(g.b, g.b_row, g.b_batch);  // B [K, N] row-major
  const bool t_view = g.b_row == 1 && aligned(g.b, g.b_col, g.b_batch);     // B = W^T, W [N, K] row-major
  if (!rows_of_k && !t_view) {
    if (why)
      *why = fmt::format("B must have a unit stride in N or in K and 16-byte aligned rows and base (B strides: row {}, "
                         "column {})",
                         g.b_row, g.b_col);
    return false;
  }
  return true;
}

// What the tensor-core rungs of mm, bmm and addmm (mma.sync, wgmma) take: bf16 or f16 operands
// that tensor_core_operands_ok accepts. `instruction` names the rung's in the reason.
inline bool tensor_core_gemm_supports(const OpCall& call, const char* instruction, std::string* why) {
  const bool addmm = &call.op == &ops::addmm;
  const Tensor& a = call.input(addmm ? 1 : 0);
  const Tensor& b = call.input(addmm ? 2 : 1);
  if (a.dtype() != DType::bf16 && a.dtype() != DType::f16) {
    if (why) *why = fmt::format("{} here takes bf16 or f16 operands, got {}", instruction, dtype_short_name(a.dtype()));
    return false;
  }
  return tensor_core_operands_ok(gemm_operands(a, b), why);
}

}  // namespace ts
