// ops/variants.h: the entry points of every kernel variant, grouped by op.
//
// The registry (ops/registry.cpp) lists them in ladder order with names,
// rungs and summaries; each is defined in its op folder. All take the
// prepared OpCall: inputs in call.in, the result in call.out.
#pragma once

#include <string>

#include "ops/op_call.h"
#include "ops/registry.h"

namespace ts {

// factories/  (factories.cpp, factories_cpu_ref.cpp, factories_cuda_naive.cu)
void empty_alloc(OpCall& call);
void fill_cpu_ref(OpCall& call);
void arange_cpu_ref(OpCall& call);
void rand_cpu_ref(OpCall& call);
void randn_cpu_ref(OpCall& call);
// factories_cuda_naive.cu
void fill_cuda_naive(OpCall& call);
void arange_cuda_naive(OpCall& call);
void rand_cuda_naive(OpCall& call);
void randn_cuda_naive(OpCall& call);

// copy/  (copy.cpp, copy_cpu_ref.cpp, copy_cuda.cu)
void copy_cpu_ref(OpCall& call);
bool copy_cpu_ref_supports(const OpCall& call, std::string* why);
// copy_cuda.cu: device<->device kernels, host<->device cudaMemcpyAsync
void copy_cuda(OpCall& call);
bool copy_cuda_supports(const OpCall& call, std::string* why);
void clone_composite(OpCall& call);
void contiguous_composite(OpCall& call);
void to_composite(OpCall& call);

// views/  (views.cpp): metadata only, no kernel
void t_view(OpCall& call);
void transpose_view(OpCall& call);
void permute_view(OpCall& call);
void view_view(OpCall& call);
void reshape_composite(OpCall& call);
void unsqueeze_view(OpCall& call);
void squeeze_view(OpCall& call);
void expand_view(OpCall& call);
void narrow_view(OpCall& call);
void slice_view(OpCall& call);
void select_view(OpCall& call);
void as_strided_view(OpCall& call);

// elementwise/  (elementwise_cpu_ref.cpp, elementwise_cuda_naive.cu)
void add_cpu_ref(OpCall& call);
void sub_cpu_ref(OpCall& call);
void mul_cpu_ref(OpCall& call);
void div_cpu_ref(OpCall& call);
void neg_cpu_ref(OpCall& call);
void exp_cpu_ref(OpCall& call);
void tanh_cpu_ref(OpCall& call);
void gelu_cpu_ref(OpCall& call);
void relu_cpu_ref(OpCall& call);
// elementwise_cuda_naive.cu
void add_cuda_naive(OpCall& call);
void sub_cuda_naive(OpCall& call);
void mul_cuda_naive(OpCall& call);
void div_cuda_naive(OpCall& call);
void neg_cuda_naive(OpCall& call);
void exp_cuda_naive(OpCall& call);
void tanh_cuda_naive(OpCall& call);
void gelu_cuda_naive(OpCall& call);
void relu_cuda_naive(OpCall& call);
Cost elementwise_cost(const OpCall& call);

// softmax/  (softmax_cpu_ref.cpp, softmax_cuda_naive.cu)
void softmax_cpu_ref(OpCall& call);
void safe_softmax_cpu_ref(OpCall& call);
// softmax_cuda_naive.cu
void softmax_cuda_naive(OpCall& call);
void safe_softmax_cuda_naive(OpCall& call);
Cost softmax_cost(const OpCall& call);

// masking/  (masking.cpp, masking_cpu_ref.cpp, masking_cuda_naive.cu)
void masked_fill_composite(OpCall& call);
void masked_fill__cpu_ref(OpCall& call);
void where_cpu_ref(OpCall& call);
void triu_cpu_ref(OpCall& call);
void tril_cpu_ref(OpCall& call);
// masking_cuda_naive.cu
void masked_fill__cuda_naive(OpCall& call);
void where_cuda_naive(OpCall& call);
void triu_cuda_naive(OpCall& call);
void tril_cuda_naive(OpCall& call);

// reduce/  (reduce_cpu_ref.cpp, reduce_cuda_naive.cu)
void sum_cpu_ref(OpCall& call);
void max_cpu_ref(OpCall& call);
// reduce_cuda_naive.cu
void sum_cuda_naive(OpCall& call);
void max_cuda_naive(OpCall& call);
Cost reduce_cost(const OpCall& call);

// matmul/  (matmul.cpp, matmul_cpu_ref.cpp, matmul_cpu_openblas.cpp)
void mm_cpu_ref(OpCall& call);
void mm_cpu_openblas(OpCall& call);
void bmm_cpu_ref(OpCall& call);
void bmm_cpu_openblas(OpCall& call);
void addmm_cpu_ref(OpCall& call);
void addmm_cpu_openblas(OpCall& call);
// matmul_cuda_naive.cu, matmul_cuda_tiled.cu, matmul_cublas.cpp
void mm_cuda_naive(OpCall& call);
void bmm_cuda_naive(OpCall& call);
void addmm_cuda_naive(OpCall& call);
void mm_cuda_tiled(OpCall& call);
void bmm_cuda_tiled(OpCall& call);
void addmm_cuda_tiled(OpCall& call);
void mm_cuda_cublas(OpCall& call);
void bmm_cuda_cublas(OpCall& call);
void addmm_cuda_cublas(OpCall& call);
bool gemm_cuda_cublas_supports(const OpCall& call, std::string* why);
void matmul_composite(OpCall& call);
void linear_composite(OpCall& call);
Cost mm_cost(const OpCall& call);
Cost bmm_cost(const OpCall& call);
Cost addmm_cost(const OpCall& call);

// geglu/  (geglu.cpp, geglu_cpu_ref.cpp, geglu_cuda_fused.cu)
void geglu_cpu_ref(OpCall& call);
void geglu_cuda_fused(OpCall& call);
Cost geglu_cost(const OpCall& call);

// attention/  (attention.cpp)
void sdpa_math_composite(OpCall& call);
Cost sdpa_cost(const OpCall& call);

}  // namespace ts
