// ops/elementwise/elementwise.h: add, sub, mul, div (tensor or scalar operand,
// broadcasting) and the unary neg, exp, tanh, gelu, relu: their attributes,
// their OpDefs and the entry point of every kernel of their ladders.
//
// The ladders (elementwise.cpp lists the rungs):
//   rung 0  *_cpu_ref        elementwise_cpu_ref.cpp    one host loop over strided operands: the oracle
//   rung 1  *_cuda_strided   elementwise_cuda_strided.cu a thread per element, any views and broadcasts
//   rung 2  *_cuda_rows      elementwise_cuda_rows.cu   binary ops: 16-byte packs over a dense row broadcast (a bias)
//   top     *_cuda_vec16     elementwise_cuda_vec16.cu  dense operands: a thread per 16-byte pack
#pragma once

#include <optional>

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct BinaryAttrs {
  double alpha = 1;              // add, sub: a + alpha * b, a - alpha * b
  std::optional<double> scalar;  // the second operand when it is a number (add(a, 2.5)); then input b is absent
};

struct GeluAttrs {
  GeluApprox approximate = GeluApprox::none;
};

namespace ops {
extern const OpDef add, sub, mul, div;       // BinaryAttrs
extern const OpDef neg, exp, tanh, relu;     // NoAttrs
extern const OpDef gelu;                     // GeluAttrs
}  // namespace ops

// Binary kernels: a [*] any strides; b broadcastable to out's shape, or nullptr
// when attrs.scalar is the operand; out [*] contiguous, of the broadcast shape.
void add_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void sub_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void mul_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void div_cpu_ref(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void add_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void sub_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void mul_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void div_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void add_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void sub_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void mul_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void div_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void add_cuda_vec16(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void sub_cuda_vec16(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void mul_cuda_vec16(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);
void div_cuda_vec16(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out);

// Unary kernels: x [*] any strides; out [*] contiguous, of x's shape.
void neg_cpu_ref(const Tensor& x, Tensor& out);
void exp_cpu_ref(const Tensor& x, Tensor& out);
void tanh_cpu_ref(const Tensor& x, Tensor& out);
void relu_cpu_ref(const Tensor& x, Tensor& out);
void gelu_cpu_ref(const Tensor& x, const GeluAttrs& attrs, Tensor& out);
void neg_cuda_strided(const Tensor& x, Tensor& out);
void exp_cuda_strided(const Tensor& x, Tensor& out);
void tanh_cuda_strided(const Tensor& x, Tensor& out);
void relu_cuda_strided(const Tensor& x, Tensor& out);
void gelu_cuda_strided(const Tensor& x, const GeluAttrs& attrs, Tensor& out);
void neg_cuda_vec16(const Tensor& x, Tensor& out);
void exp_cuda_vec16(const Tensor& x, Tensor& out);
void tanh_cuda_vec16(const Tensor& x, Tensor& out);
void relu_cuda_vec16(const Tensor& x, Tensor& out);
void gelu_cuda_vec16(const Tensor& x, const GeluAttrs& attrs, Tensor& out);

// What the faster rungs need of a call (host checks; they run without a GPU).
bool elementwise_rows_supports(const OpCall& call, std::string* why);   // a dense row broadcast, 16-byte aligned
bool elementwise_vec16_supports(const OpCall& call, std::string* why);  // every operand dense, of out's shape, aligned

}  // namespace ts
