// ops/elementwise/elementwise_cuda_strided.cu: rung 1 of every elementwise op on CUDA.
//
// What changed from rung 0 (elementwise_cpu_ref.cpp): one GPU thread per output
//        element instead of one host loop. Any views and broadcasts: each thread
//        turns its linear index into per-operand element offsets (OffsetCalc:
//        a division and a modulo per merged dim, 0 strides on broadcast dims).
//        Arithmetic in f32, one rounding at the store, as on the CPU.
// Cost:  memory-bound: every input read once, the output written once; each
//        thread makes 2-byte (bf16) accesses, and the index arithmetic costs more
//        than the add: the faster rungs remove both where the layout allows.
// Try:   TS_VARIANT=add/cuda/strided ./build/dev/tutorials/01_matmul_add --device cuda
//        ./build/dev/ts_ladder --op add --device cuda
//
// The launches here use the chevrons every CUDA tutorial teaches,
// kernel<<<grid, block>>>(args), each followed by TS_CHECK_LAUNCH() so that a
// failed launch is reported, naming this variant. The faster rungs launch with
// ts::launch, which saves that one runtime call per op (ops/cuda_common.cuh).
#include "ops/checks.h"
#include "ops/elementwise/elementwise_functors.cuh"

namespace ts {

// out[o2] = op(a[o0], b[o1]), the offsets from the linear index; b null: the scalar operand.
template <typename T, typename Op>
__global__ void elementwise_binary_strided_kernel(const T* __restrict__ a, const T* __restrict__ b, float b_scalar,
                                                  T* __restrict__ out, int64_t n, OffsetCalc<3> calc, Op op) {
  // Grid-stride loop: a grid capped at kMaxBlocks still covers any n.
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[3];
    calc.offsets(i, o);
    const float vb = b != nullptr ? to_float(b[o[1]]) : b_scalar;
    out[o[2]] = from_float<T>(op(to_float(a[o[0]]), vb));
  }
}

template <typename T, typename Op>
__global__ void elementwise_unary_strided_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n,
                                                 OffsetCalc<2> calc, Op op) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[2];
    calc.offsets(i, o);
    out[o[1]] = from_float<T>(op(to_float(x[o[0]])));
  }
}

namespace {

template <typename Op>
void launch_binary_strided(const Tensor& a, const Tensor* b, float scalar, Tensor& out, Op op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Dims zeros = Dims::filled(out.dim(), 0);
  const auto calc = make_offset_calc<3>(
      out.shape(), {broadcast_strides(a, out.shape()), b ? broadcast_strides(*b, out.shape()) : zeros, out.strides()});
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pb = b != nullptr ? static_cast<const T*>(b->data_ptr()) : nullptr;
    elementwise_binary_strided_kernel<T, Op><<<grid_for(n), kThreads, 0, cuda::current_stream()>>>(
        static_cast<const T*>(a.data_ptr()), pb, scalar, static_cast<T*>(out.data_ptr()), n, calc, op);
    TS_CHECK_LAUNCH();
  });
}

template <typename Op>
void launch_unary_strided(const Tensor& x, Tensor& out, Op op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const auto calc = make_offset_calc<2>(out.shape(), {x.strides(), out.strides()});
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise_unary_strided_kernel<T, Op><<<grid_for(n), kThreads, 0, cuda::current_stream()>>>(
        static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), n, calc, op);
    TS_CHECK_LAUNCH();
  });
}

}  // namespace

void add_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  launch_binary_strided(a, b, scalar_operand(attrs), out, add_op(attrs));
}
void sub_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  launch_binary_strided(a, b, scalar_operand(attrs), out, sub_op(attrs));
}
void mul_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  launch_binary_strided(a, b, scalar_operand(attrs), out, MulOp{});
}
void div_cuda_strided(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  launch_binary_strided(a, b, scalar_operand(attrs), out, DivOp{});
}
void neg_cuda_strided(const Tensor& x, Tensor& out) { launch_unary_strided(x, out, NegOp{}); }
void exp_cuda_strided(const Tensor& x, Tensor& out) { launch_unary_strided(x, out, ExpOp{}); }
void tanh_cuda_strided(const Tensor& x, Tensor& out) { launch_unary_strided(x, out, TanhOp{}); }
void relu_cuda_strided(const Tensor& x, Tensor& out) { launch_unary_strided(x, out, ReluOp{}); }
void gelu_cuda_strided(const Tensor& x, const GeluAttrs& attrs, Tensor& out) {
  if (attrs.approximate == GeluApprox::tanh) {
    launch_unary_strided(x, out, GeluTanhOp{});
  } else {
    launch_unary_strided(x, out, GeluErfOp{});
  }
}

}  // namespace ts
