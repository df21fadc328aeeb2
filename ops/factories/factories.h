// ops/factories/factories.h: empty, fill_, arange, rand, randn: their
// attributes, their OpDefs and the entry point of every kernel of their ladders.
//
// zeros/ones/full are empty + fill_, as in PyTorch's profile.
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct FactoryAttrs {  // empty
  Dims shape;
  Options options;
};

struct FillAttrs {  // fill_
  double value = 0;
};

struct ArangeAttrs {  // arange: start + i * step for i in [0, length)
  double start = 0, step = 1;  // floating bounds: the values computed in double
  int64_t length = 0;
  Options options;
  // Integer bounds: the values computed in int64 from these instead (exact at any magnitude).
  bool integer = false;
  int64_t int_start = 0, int_step = 0;
};

struct RandomAttrs {  // rand, randn: value i is a hash of (seed, offset + 2i)
  Dims shape;
  Options options;
  uint64_t seed = 0, offset = 0;
};

namespace ops {
extern const OpDef empty;  // FactoryAttrs
extern const OpDef fill_;  // FillAttrs
extern const OpDef arange; // ArangeAttrs
extern const OpDef rand, randn;  // RandomAttrs
}  // namespace ops

// out: allocated by prepare; empty has nothing to compute.
void empty_alloc(Tensor& out);
// out: the tensor filled in place (fill_'s input itself), any dtype and strides.
void fill_cpu_ref(const FillAttrs& attrs, Tensor& out);
void fill_cuda_strided(const FillAttrs& attrs, Tensor& out);
void fill_cuda_dense(const FillAttrs& attrs, Tensor& out);
bool fill_cuda_dense_supports(const OpCall& call, std::string* why);
// out [length] contiguous, any dtype.
void arange_cpu_ref(const ArangeAttrs& attrs, Tensor& out);
void arange_cuda_naive(const ArangeAttrs& attrs, Tensor& out);
// out [*] contiguous, floating.
void rand_cpu_ref(const RandomAttrs& attrs, Tensor& out);
void randn_cpu_ref(const RandomAttrs& attrs, Tensor& out);
void rand_cuda_naive(const RandomAttrs& attrs, Tensor& out);
void randn_cuda_naive(const RandomAttrs& attrs, Tensor& out);

}  // namespace ts
