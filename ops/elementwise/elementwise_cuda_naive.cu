// ops/elementwise/elementwise_cuda_naive.cu: rung 1 of every elementwise op on CUDA:
// add, sub, mul, div (tensor or scalar operand, broadcasting), neg, exp, tanh, gelu, relu.
//
// What changed from rung 0 (elementwise_cpu_ref.cpp): one GPU thread per
//        element (or per 16-byte pack) instead of one host loop. Three kernels:
//          *_contiguous_kernel: every operand dense, of the output's shape and
//            16-byte aligned: each thread loads and stores 16 bytes at once
//            (8 bf16/f16 or 4 f32), the widest access a thread can make;
//          elementwise_binary_rows_kernel: the same packs when an operand is
//            a dense row broadcast over leading dims (a bias: x [M, N] + b [N]);
//          *_strided_kernel: any views and broadcasts: each thread turns its
//            linear index into per-operand offsets (OffsetCalc, 0 strides on
//            broadcast dims).
//        Arithmetic in f32, one rounding at the store, as on the CPU.
// Cost:  memory-bound: every input read once, the output written once. A
//        [8192, 3072] bf16 add moves 151 MB: ~35 us at the H200's ~4.3 TB/s.
// Try:   TS_VARIANT=add/cuda/naive ./build/dev/ts_tests -tc='cuda*'
#include "ops/checks.h"
#include "ops/cuda_common.cuh"
#include "ops/elementwise/gelu_math.h"
#include "ops/variants.h"

namespace ts {

// Functors and kernels live in ts:: (not an anonymous namespace) so that traces
// show short names: ts::elementwise_binary_contiguous_kernel<__nv_bfloat16, ts::AddOp>.

// ---- the scalar functions, in f32 (the same formulas as the CPU reference) ----

struct AddOp {
  float alpha;
  __device__ float operator()(float a, float b) const { return a + alpha * b; }
};
struct SubOp {
  float alpha;
  __device__ float operator()(float a, float b) const { return a - alpha * b; }
};
struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }  // IEEE division (nvcc's -prec-div default)
};
struct NegOp {
  __device__ float operator()(float x) const { return -x; }
};
struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
};
struct TanhOp {
  __device__ float operator()(float x) const { return tanhf(x); }
};
// Both gelu forms avoid 1 + (something near -1): for x < -3 that sum cancels to a
// few f32 ulps and loses most digits of the tiny result (the CPU rung does the same).
struct GeluErfOp {  // x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2)
  __device__ float operator()(float x) const { return 0.5f * x * erfcf(x * -0.7071067811865476f); }
};
struct GeluTanhOp {  // 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3): see gelu_math.h
  __device__ float operator()(float x) const { return gelu_tanh_fast_f32(x); }
};
struct ReluOp {  // NaN propagates, as in PyTorch
  __device__ float operator()(float x) const { return x > 0.0f || isnan(x) ? x : 0.0f; }
};

// ---- kernels --------------------------------------------------------------------

// out[i] = op(a[i], b[i]) (or op(a[i], b_scalar) when b is null) over dense operands.
template <typename T, typename Op>
__global__ void elementwise_binary_contiguous_kernel(const T* __restrict__ a, const T* __restrict__ b, float b_scalar,
                                                     T* __restrict__ out, int64_t n, Op op) {
  using P = Pack<T>;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t packs = n / P::kSize;
  // Thread t handles packs t, t + stride, ...: neighbouring threads touch
  // neighbouring 16-byte packs, so each warp reads 512 contiguous bytes per operand.
  for (int64_t p = first; p < packs; p += stride) {
    const P va = reinterpret_cast<const P*>(a)[p];
    P vb;
    if (b != nullptr) vb = reinterpret_cast<const P*>(b)[p];
    P vo;
#pragma unroll
    for (int j = 0; j < P::kSize; ++j)
      vo.v[j] = from_float<T>(op(to_float(va.v[j]), b != nullptr ? to_float(vb.v[j]) : b_scalar));
    reinterpret_cast<P*>(out)[p] = vo;
  }
  // The last n % kSize elements do not fill a pack: one element per thread.
  for (int64_t i = packs * P::kSize + first; i < n; i += stride)
    out[i] = from_float<T>(op(to_float(a[i]), b != nullptr ? to_float(b[i]) : b_scalar));
}

// A bias-style broadcast: a and b are each either dense of out's shape or one
// dense row (the trailing dims of out) repeated over the leading dims, like
// x [M, N] + b [N]. Element e of out reads each operand at e % period (period
// n for a dense operand, the row length for a row), so a thread pays one
// modulo per 16-byte pack instead of a division per dim per element.
template <typename T, typename Op>
__global__ void elementwise_binary_rows_kernel(const T* __restrict__ a, int64_t a_period, const T* __restrict__ b,
                                               int64_t b_period, T* __restrict__ out, int64_t n, Op op) {
  using P = Pack<T>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < n / P::kSize; p += stride) {
    const int64_t e = p * P::kSize;  // periods are multiples of kSize: a pack never straddles a row
    const P va = *reinterpret_cast<const P*>(a + e % a_period);
    const P vb = *reinterpret_cast<const P*>(b + e % b_period);
    P vo;
#pragma unroll
    for (int j = 0; j < P::kSize; ++j) vo.v[j] = from_float<T>(op(to_float(va.v[j]), to_float(vb.v[j])));
    reinterpret_cast<P*>(out)[p] = vo;
  }
}

// The same over any strides: offsets[0] reads a, [1] reads b, [2] writes out.
template <typename T, typename Op>
__global__ void elementwise_binary_strided_kernel(const T* __restrict__ a, const T* __restrict__ b, float b_scalar,
                                                  T* __restrict__ out, int64_t n, OffsetCalc<3> calc, Op op) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[3];
    calc.offsets(i, o);
    const float vb = b != nullptr ? to_float(b[o[1]]) : b_scalar;
    out[o[2]] = from_float<T>(op(to_float(a[o[0]]), vb));
  }
}

template <typename T, typename Op>
__global__ void elementwise_unary_contiguous_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n, Op op) {
  using P = Pack<T>;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t packs = n / P::kSize;
  for (int64_t p = first; p < packs; p += stride) {
    const P vx = reinterpret_cast<const P*>(x)[p];
    P vo;
#pragma unroll
    for (int j = 0; j < P::kSize; ++j) vo.v[j] = from_float<T>(op(to_float(vx.v[j])));
    reinterpret_cast<P*>(out)[p] = vo;
  }
  for (int64_t i = packs * P::kSize + first; i < n; i += stride) out[i] = from_float<T>(op(to_float(x[i])));
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

// ---- launchers ----------------------------------------------------------------------

namespace {

// The period at which x repeats when read as out: out.numel() when x is dense of
// out's shape, the row length when x is a dense row of out's trailing dims
// (leading dims absent or 1), else 0.
int64_t broadcast_period(const Tensor& x, const Dims& out_shape) {
  if (!x.is_contiguous()) return 0;
  int xd = x.dim();
  while (xd > 0 && x.shape()[x.dim() - xd] == 1) --xd;  // leading 1s broadcast like absent dims
  if (xd > out_shape.size()) return 0;
  for (int i = 1; i <= xd; ++i)
    if (x.shape()[x.dim() - i] != out_shape[out_shape.size() - i]) return 0;
  return x.numel();
}

// a [*] (any strides), b broadcastable to out or the call's scalar; out [*] contiguous.
template <typename Op>
void launch_binary(OpCall& call, Op op) {
  const Tensor& a = call.input(0);
  const Tensor* b = call.has_scalar ? nullptr : &call.input(1);
  Tensor& out = call.out;
  const int64_t n = out.numel();
  if (n == 0) return;
  const float scalar = static_cast<float>(call.scalar);
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = static_cast<const T*>(a.data_ptr());
    const T* pb = b != nullptr ? static_cast<const T*>(b->data_ptr()) : nullptr;
    T* po = static_cast<T*>(out.data_ptr());
    const bool dense = a.is_contiguous() && a.shape() == out.shape() && aligned16(pa) && aligned16(po) &&
                       (b == nullptr || (b->is_contiguous() && b->shape() == out.shape() && aligned16(pb)));
    if (dense) {
      launch(elementwise_binary_contiguous_kernel<T, Op>, grid_for(ceil_div(n, Pack<T>::kSize)), kThreads, pa, pb,
             scalar, po, n, op);
      return;
    }
    if (b != nullptr && n % Pack<T>::kSize == 0 && aligned16(pa) && aligned16(pb) && aligned16(po)) {
      const int64_t a_period = broadcast_period(a, out.shape()), b_period = broadcast_period(*b, out.shape());
      if (a_period % Pack<T>::kSize == 0 && b_period % Pack<T>::kSize == 0 && a_period > 0 && b_period > 0) {
        launch(elementwise_binary_rows_kernel<T, Op>, grid_for(n / Pack<T>::kSize), kThreads, pa, a_period, pb,
               b_period, po, n, op);
        return;
      }
    }
    const Dims zeros = Dims::filled(out.dim(), 0);
    const auto calc = make_offset_calc<3>(
        out.shape(), {broadcast_strides(a, out.shape()), b ? broadcast_strides(*b, out.shape()) : zeros, out.strides()});
    launch(elementwise_binary_strided_kernel<T, Op>, grid_for(n), kThreads, pa, pb, scalar, po, n, calc, op);
  });
}

// x [*] (any strides); out [*] contiguous, of x's shape.
template <typename Op>
void launch_unary(OpCall& call, Op op) {
  const Tensor& x = call.input(0);
  Tensor& out = call.out;
  const int64_t n = out.numel();
  if (n == 0) return;
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    if (x.is_contiguous() && aligned16(px) && aligned16(po)) {
      launch(elementwise_unary_contiguous_kernel<T, Op>, grid_for(ceil_div(n, Pack<T>::kSize)), kThreads, px, po, n,
             op);
      return;
    }
    const auto calc = make_offset_calc<2>(out.shape(), {x.strides(), out.strides()});
    launch(elementwise_unary_strided_kernel<T, Op>, grid_for(n), kThreads, px, po, n, calc, op);
  });
}

}  // namespace

void add_cuda_naive(OpCall& call) { launch_binary(call, AddOp{static_cast<float>(call.alpha)}); }
void sub_cuda_naive(OpCall& call) { launch_binary(call, SubOp{static_cast<float>(call.alpha)}); }
void mul_cuda_naive(OpCall& call) { launch_binary(call, MulOp{}); }
void div_cuda_naive(OpCall& call) { launch_binary(call, DivOp{}); }
void neg_cuda_naive(OpCall& call) { launch_unary(call, NegOp{}); }
void exp_cuda_naive(OpCall& call) { launch_unary(call, ExpOp{}); }
void tanh_cuda_naive(OpCall& call) { launch_unary(call, TanhOp{}); }
void relu_cuda_naive(OpCall& call) { launch_unary(call, ReluOp{}); }

void gelu_cuda_naive(OpCall& call) {
  if (call.approximate == GeluApprox::tanh) {
    launch_unary(call, GeluTanhOp{});
  } else {
    launch_unary(call, GeluErfOp{});
  }
}

}  // namespace ts
