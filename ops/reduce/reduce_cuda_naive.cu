// ops/reduce/reduce_cuda_naive.cu: rung 1 of sum and max over one dim on CUDA.
//
// What changed from rung 0 (reduce_cpu_ref.cpp): one warp per output element.
//        The 32 lanes stride along the reduced dim (coalesced when that dim is
//        the innermost), each keeps a partial, and five shuffle steps combine
//        the partials. sum accumulates in f32, each lane's partial compensated
//        (RunningSum: a plain f32 partial stops growing at 2^24 ones); in
//        another order than the CPU, so results agree to rounding. max keeps
//        the first index of the largest value, and a NaN wins, as in PyTorch.
// Cost:  one read of the input, one write per output element.
// Try:   TS_VARIANT=sum/cuda/naive ./build/dev/ts_tests -tc='cuda*'
#include <math_constants.h>

#include "ops/cuda_common.cuh"
#include "ops/reduce/reduce_layout.h"

namespace ts {

constexpr int kReduceWarpsPerBlock = 4;

// rows output elements; row r reads n inputs starting at row_calc's offset 0, xs apart,
// and writes the output element at offset 1.
template <typename T>
__global__ void sum_warp_per_output_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t n,
                                           int64_t xs, OffsetCalc<2> row_calc) {
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps only
  int64_t o[2];
  row_calc.offsets(row, o);
  RunningSum partial;
  for (int64_t i = lane; i < n; i += 32) partial.add(to_float(x[o[0] + i * xs]));
  const float acc = warp_sum(partial.value());
  if (lane == 0) out[o[1]] = from_float<T>(acc);
}

// Should candidate (v, i) replace the current best (b, bi)? A NaN beats any
// number, a larger value beats a smaller one, and on a tie the lower index wins.
// bi < 0 means "no element yet".
__device__ __forceinline__ bool max_takes(float v, int64_t i, float b, int64_t bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  const bool v_nan = isnan(v), b_nan = isnan(b);
  if (v_nan || b_nan) return v_nan && b_nan ? i < bi : v_nan;
  if (v != b) return v > b;
  return i < bi;
}

template <typename T>
__global__ void max_warp_per_output_kernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices,
                                           int64_t rows, int64_t n, int64_t xs, OffsetCalc<2> row_calc) {
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  int64_t o[2];
  row_calc.offsets(row, o);
  float best = -CUDART_INF_F;
  int64_t best_i = -1;
  for (int64_t i = lane; i < n; i += 32) {
    const float v = to_float(x[o[0] + i * xs]);
    if (max_takes(v, i, best, best_i)) {
      best = v;
      best_i = i;
    }
  }
  // The same rule across lanes; it is symmetric, so every lane ends with the same winner.
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int64_t other_i = __shfl_xor_sync(0xffffffffu, best_i, offset);
    if (max_takes(other, other_i, best, best_i)) {
      best = other;
      best_i = other_i;
    }
  }
  if (lane == 0) {
    values[o[1]] = from_float<T>(best);
    indices[o[1]] = best_i;
  }
}

namespace {

struct ReduceRows {
  int64_t rows, n, xs;
  OffsetCalc<2> calc;
};

// x [*]; out: x's shape without (or with size 1 at) attrs.dim, contiguous.
ReduceRows reduce_rows(const Tensor& x, const ReduceAttrs& attrs, const Tensor& out) {
  const int d = static_cast<int>(attrs.dim);
  const ReduceLayout layout = reduce_layout(x, attrs, out);
  return {out.numel(), x.dim() ? x.shape()[d] : 1, x.dim() ? x.strides()[d] : 0,
          make_offset_calc<2>(layout.rows, {layout.x_strides, layout.out_strides})};
}

unsigned reduce_blocks(int64_t rows) { return static_cast<unsigned>(ceil_div(rows, kReduceWarpsPerBlock)); }

}  // namespace

void sum_cuda_naive(const Tensor& x, const ReduceAttrs& attrs, Tensor& out) {
  const ReduceRows r = reduce_rows(x, attrs, out);
  if (r.rows == 0) return;
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(sum_warp_per_output_kernel<T>, reduce_blocks(r.rows), 32 * kReduceWarpsPerBlock,
           static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), r.rows, r.n, r.xs,
           r.calc);
  });
}

void max_cuda_naive(const Tensor& x, const ReduceAttrs& attrs, Tensor& out, Tensor& indices) {
  const ReduceRows r = reduce_rows(x, attrs, out);
  if (r.rows == 0) return;
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(max_warp_per_output_kernel<T>, reduce_blocks(r.rows), 32 * kReduceWarpsPerBlock,
           static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()),
           static_cast<int64_t*>(indices.data_ptr()), r.rows, r.n, r.xs, r.calc);
  });
}

}  // namespace ts
