// ops/op_call.h: OpId and OpCall, the one argument every kernel variant takes.
//
// A public op (ops/ops.h) fills an OpCall with its inputs and attributes and
// hands it to dispatch() (ops/dispatch.h). Each op documents which fields it
// uses; the rest keep their defaults. Variants read inputs from `in` and
// write `out` (allocated by the op's prepare step, or a view, or the
// in-place target).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include "profiler/recorded_op.h"
#include "tensor/tensor.h"

namespace ts {

// Every op that passes through the dispatcher. The profiler shows each as
// "ts::<name>" (op_name below), like PyTorch's "aten::<name>".
#define TS_FOR_EACH_OP(X)                                                                                          \
  X(empty) X(fill_) X(copy_) X(clone) X(contiguous) X(to) X(arange) X(rand) X(randn)                               \
  X(t) X(transpose) X(permute) X(view) X(reshape) X(unsqueeze) X(squeeze) X(expand) X(narrow) X(slice) X(select)   \
  X(as_strided)                                                                                                    \
  X(add) X(sub) X(mul) X(div) X(neg) X(exp) X(tanh) X(gelu) X(relu)                                                \
  X(softmax) X(_safe_softmax) X(masked_fill) X(masked_fill_) X(where) X(triu) X(tril)                              \
  X(sum) X(max)                                                                                                    \
  X(mm) X(bmm) X(matmul) X(addmm) X(linear) X(geglu) X(scaled_dot_product_attention)

enum class OpId : uint16_t {
#define TS_OP_ENUM(name) name,
  TS_FOR_EACH_OP(TS_OP_ENUM)
#undef TS_OP_ENUM
      kCount
};
constexpr int kNumOps = static_cast<int>(OpId::kCount);

// "ts::add": the name the profiler records and errors use.
const char* op_name(OpId op);
// "add": the op part of a variant name.
const char* op_short_name(OpId op);

enum class GeluApprox : uint8_t { none, tanh };

struct Variant;

struct OpCall final : profiler::RecordedOp {
  OpId op;
  Device device = kCPU;                     // where the op runs; set by prepare from the inputs
  std::array<const Tensor*, 4> in{};        // inputs in the op's documented order (nullptr: absent)
  int num_in = 0;
  Tensor out;                               // the result
  Tensor out2;                              // a second result (max: indices)

  // Attributes. Which op reads which is written beside each op in ops/ops.h.
  double scalar = 0;                        // scalar operand of add/sub/mul/div, value of fill_/masked_fill
  bool has_scalar = false;                  // true when the second operand of a binary op is `scalar`
  double alpha = 1, beta = 1;               // add/sub: a + alpha*b; addmm: beta*C + alpha*(A@B)
  int64_t dim = 0, dim1 = 0;                // reduction/softmax dim, transpose dims, triu/tril diagonal
  int64_t start = 0, end = 0, step = 1;     // narrow/slice/select
  bool keepdim = false;                     // sum, max
  bool causal = false;                      // scaled_dot_product_attention
  double attn_scale = 0;                    // scaled_dot_product_attention; 0: 1/sqrt(head_dim)
  GeluApprox approximate = GeluApprox::none;
  Dims shape, strides;                      // views and factories
  DType dtype = DType::f32;                 // factories and to()
  Device target = kCPU;                     // to(device): the destination
  uint64_t seed = 0;                        // rand/randn: the generator state the op consumes

  const Variant* variant = nullptr;         // chosen by dispatch(); the profiler records it
  Where loc;                                // the user's call site (profiler with_stack)

  // inputs: the op's tensors in its documented order (nullptr for an absent optional one).
  OpCall(OpId id, Where w, std::initializer_list<const Tensor*> inputs = {}) : op(id), loc(w) {
    for (const Tensor* x : inputs) in[num_in++] = x;
  }
  const Tensor& input(int i) const { return *in[i]; }

  // What the profiler asks while it records (profiler/recorded_op.h).
  const char* name() const override;
  std::span<const Tensor* const> tensor_args() const override { return {in.data(), static_cast<size_t>(num_in)}; }
  void scalar_args(std::vector<double>& out) const override;
  int64_t flops() const override;
  const char* variant_name() const override;
  const std::source_location& call_site() const override { return loc; }
};

}  // namespace ts
