// ops/matmul/matmul_cpu_openblas.cpp: rung 1 of mm, bmm and addmm on the host: OpenBLAS sgemm.
//
// What changed from rung 0: a blocked, vectorized, multithreaded GEMM does
//        the arithmetic. Layout is chosen, not copied: a row-major operand is
//        passed as NoTrans, a t() view (column-major) as Trans with its
//        leading dimension; only other strides are copied to contiguous.
//        bf16/f16 operands are widened to f32 (exact), multiplied with an f32
//        accumulator, and rounded once into the output.
// Cost:  2*M*N*K FLOPs; a 4096^3 f32 product is ~137 GFLOP (seconds on 2 cores).
// Try:   ./build/dev/tutorials/01_matmul_add --device cpu --size 4096
#include <cblas.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "ops/checks.h"
#include "ops/cpu_loops.h"
#include "ops/matmul/matmul_gemm_cpu.h"
#include "ops/matmul/matmul.h"

namespace ts {

namespace {

// An operand as sgemm wants it: f32 data, a transpose flag and a leading dimension.
struct BlasOperand {
  const float* data = nullptr;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
  std::vector<float> owned;  // set when the operand had to be widened or made contiguous
};

BlasOperand blas_operand(const Tensor& x) {
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  const int64_t s0 = x.strides()[0], s1 = x.strides()[1];
  BlasOperand op;
  // sgemm takes the leading dimension as an int: a stride past INT32_MAX that the product
  // steps over goes to the copy below. One row (or one column) never steps: its ld is free.
  constexpr int64_t kMaxLd = std::numeric_limits<int>::max();
  if (x.dtype() == DType::f32) {
    const int64_t row_ld = rows <= 1 ? std::max<int64_t>(cols, 1) : s0;
    if ((s1 == 1 || cols <= 1) && row_ld >= std::max<int64_t>(cols, 1) && row_ld <= kMaxLd) {  // row-major
      op.data = static_cast<const float*>(x.data_ptr());
      op.ld = row_ld;
      return op;
    }
    const int64_t col_ld = cols <= 1 ? std::max<int64_t>(rows, 1) : s1;
    if ((s0 == 1 || rows <= 1) && col_ld >= std::max<int64_t>(rows, 1) && col_ld <= kMaxLd) {  // column-major: a t() view
      op.data = static_cast<const float*>(x.data_ptr());
      op.trans = CblasTrans;
      op.ld = col_ld;
      return op;
    }
  }
  // Widen (bf16/f16) or gather (odd strides) into a contiguous f32 copy.
  op.owned.resize(static_cast<size_t>(rows * cols));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* p = static_cast<const T*>(x.data_ptr());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) op.owned[static_cast<size_t>(i * cols + j)] = load_f32(p, i * s0 + j * s1);
    }
  });
  op.data = op.owned.data();
  op.ld = std::max<int64_t>(cols, 1);
  return op;
}

}  // namespace

void gemm_cpu_openblas(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta, Tensor& out) {
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  if (M == 0 || N == 0) return;
  const bool use_c = c.defined() && beta != 0;

  // sgemm accumulates into an f32 [M, N] row-major buffer: out itself when it is f32, else a scratch.
  const bool direct = out.dtype() == DType::f32 && out.is_contiguous();
  std::vector<float> scratch(direct ? 0 : static_cast<size_t>(M * N));
  float* acc = direct ? static_cast<float*>(out.data_ptr()) : scratch.data();

  if (use_c) {  // acc = c broadcast to [M, N], then sgemm scales it by beta
    visit_dtype(c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
        const T* pc = static_cast<const T*>(c.data_ptr());
        for_each_offset<1>(Dims{M, N}, {broadcast_strides(c, Dims{M, N})},
                           [&, i = int64_t{0}](const auto& o) mutable { acc[i++] = load_f32(pc, o[0]); });
      }
    });
  }

  if (K == 0) {  // no product: out = beta * c (or zeros)
    for (int64_t i = 0; i < M * N; ++i) acc[i] = use_c ? static_cast<float>(beta) * acc[i] : 0.0f;
  } else {
    const BlasOperand A = blas_operand(a), B = blas_operand(b);
    cblas_sgemm(CblasRowMajor, A.trans, B.trans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                static_cast<float>(alpha), A.data, static_cast<int>(A.ld), B.data, static_cast<int>(B.ld),
                use_c ? static_cast<float>(beta) : 0.0f, acc, static_cast<int>(N));
  }

  if (!direct) {  // round once into the output dtype and layout
    visit_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
        T* po = static_cast<T*>(out.data_ptr());
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            store_f32(po, i * out.strides()[0] + j * out.strides()[1], acc[static_cast<size_t>(i * N + j)]);
      }
    });
  }
}

void mm_cpu_openblas(const Tensor& a, const Tensor& b, Tensor& out) { gemm_cpu_openblas(a, b, Tensor{}, 1, 0, out); }

void bmm_cpu_openblas(const Tensor& a, const Tensor& b, Tensor& out) {
  for (int64_t i = 0; i < out.shape()[0]; ++i) {
    Tensor out_i = batch_matrix(out, i);
    gemm_cpu_openblas(batch_matrix(a, i), batch_matrix(b, i), Tensor{}, 1, 0, out_i);
  }
}

void addmm_cpu_openblas(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  gemm_cpu_openblas(a, b, c, attrs.alpha, attrs.beta, out);
}

}  // namespace ts
