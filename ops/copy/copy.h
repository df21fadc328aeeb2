// ops/copy/copy.h: copy_ and the composites built on it (clone, contiguous,
// to): their attributes, their OpDefs and the entry point of every kernel.
//
// copy_'s ladder: cpu/ref (host to host) -> cuda/strided (on one GPU, any
// layout and dtype: one kernel) -> cuda/staged (across the bus when the layouts
// or dtypes differ: the bytes cross unchanged, the GPU rearranges them) ->
// cuda/memcpy (dense and alike: one cudaMemcpyAsync, any direction).
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct ToAttrs {  // to(dtype), to(device)
  DType dtype = DType::f32;
  Device device = kCPU;
};

namespace ops {
extern const OpDef copy_;                // NoAttrs; inputs: dst, src
extern const OpDef clone, contiguous;    // NoAttrs
extern const OpDef to;                   // ToAttrs
}  // namespace ops

// dst (also the output: copied into in place): any dtype, any strides, no two
// elements sharing memory; src: any dtype, broadcastable to dst's shape.
void copy_cpu_ref(const Tensor& dst, const Tensor& src, Tensor& out);
void copy_cuda_strided(const Tensor& dst, const Tensor& src, Tensor& out);
void copy_cuda_staged(const Tensor& dst, const Tensor& src, Tensor& out);
void copy_cuda_memcpy(const Tensor& dst, const Tensor& src, Tensor& out);
bool copy_cpu_ref_supports(const OpCall& call, std::string* why);
bool copy_cuda_strided_supports(const OpCall& call, std::string* why);
bool copy_cuda_staged_supports(const OpCall& call, std::string* why);
bool copy_cuda_memcpy_supports(const OpCall& call, std::string* why);

// Composites: out = empty_like(x) + copy_ (clone); x itself or clone (contiguous);
// empty + copy_ (to).
void clone_composite(const Tensor& x, Tensor& out);
void contiguous_composite(const Tensor& x, Tensor& out);
void to_composite(const Tensor& x, const ToAttrs& attrs, Tensor& out);

}  // namespace ts
