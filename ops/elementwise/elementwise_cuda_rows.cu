// ops/elementwise/elementwise_cuda_rows.cu: rung 2 of add, sub, mul, div on CUDA.
//
// What changed from the strided rung (elementwise_cuda_strided.cu): a bias-style
//        broadcast, x [M, N] + b [N], is common enough to earn its own kernel.
//        Each operand is either dense of the output's shape or one dense row
//        (the output's trailing dims) repeated over the leading dims. Element e
//        of the output reads each operand at e % period (the output's size for
//        a dense operand, the row length for a row), so a thread pays one modulo
//        per 16-byte pack instead of a division per dim per element, and makes
//        16-byte accesses like the vec16 rung.
// Cost:  memory-bound: the dense operand and the output cross memory once; the
//        row stays in L1/L2 after its first read.
// Try:   TS_VARIANT=add/cuda/rows ./build/dev/tutorials/01_matmul_add --device cuda --fused=false
//        ./build/dev/ts_ladder --op add --device cuda
#include "ops/elementwise/elementwise_functors.cuh"

namespace ts {

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

int pack_size(DType dtype) { return 16 / static_cast<int>(element_size(dtype)); }

template <typename Op>
void launch_binary_rows(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t a_period = broadcast_period(a, out.shape()), b_period = broadcast_period(b, out.shape());
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(elementwise_binary_rows_kernel<T, Op>, grid_for(n / Pack<T>::kSize), kThreads,
           static_cast<const T*>(a.data_ptr()), a_period, static_cast<const T*>(b.data_ptr()), b_period,
           static_cast<T*>(out.data_ptr()), n, op);
  });
}

}  // namespace

bool elementwise_rows_supports(const OpCall& call, std::string* why) {
  const Tensor& out = call.out;
  if (call.in[1] == nullptr) {
    if (why) *why = "needs a tensor second operand (a scalar operand has no row)";
    return false;
  }
  const int pack = pack_size(out.dtype());
  if (out.numel() % pack != 0 || !aligned16(out.data_ptr())) {
    if (why) *why = fmt::format("needs an output of a multiple of {} elements, 16-byte aligned; got shape {}", pack,
                                out.shape());
    return false;
  }
  for (const Tensor* x : {call.in[0], call.in[1]}) {
    const int64_t period = broadcast_period(*x, out.shape());
    if (period == 0 || period % pack != 0 || !aligned16(x->data_ptr())) {
      if (why) *why = fmt::format("needs each operand dense of the output's shape {} or a dense row of its trailing dims, "
                                  "a multiple of {} elements, 16-byte aligned; got shape {} strides {}",
                                  out.shape(), pack, x->shape(), x->strides());
      return false;
    }
  }
  return true;
}

void add_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  launch_binary_rows(a, *b, out, add_op(attrs));
}
void sub_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs& attrs, Tensor& out) {
  launch_binary_rows(a, *b, out, sub_op(attrs));
}
void mul_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs&, Tensor& out) {
  launch_binary_rows(a, *b, out, MulOp{});
}
void div_cuda_rows(const Tensor& a, const Tensor* b, const BinaryAttrs&, Tensor& out) {
  launch_binary_rows(a, *b, out, DivOp{});
}

}  // namespace ts
