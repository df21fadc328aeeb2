// ops/softmax/softmax_cuda_warp_vec16.cu: the top rung of softmax and _safe_softmax on CUDA,
// for dense rows of up to 1024 elements.
//
// What changed from the warp rung (softmax_cuda_warp.cu): that rung reads each
//        row three times (max, sum, write pass) with 2-byte loads: a warp asks for
//        64 bytes at a time. Here each lane loads its share of the row once, as
//        16-byte packs (a warp reads 512 contiguous bytes per load), keeps it in
//        registers (at most 32 values per lane), and computes max, exp, sum and
//        the quotient from there: one read and one write of the row, the fewest
//        bytes softmax can move.
// Cost:  memory-bound: 2 * numel * sizeof(T) bytes. [4 * 16 * 1024, 1024] bf16
//        (attention's scores at S = 1024): 268 MB, a floor of ~65 us at ~4.2 TB/s.
// Try:   TS_VARIANT=softmax/cuda/warp_vec16 ./build/dev/tutorials/04_attention --path inplace
//        ./build/dev/ts_ladder --op softmax --device cuda --shape 65536,1024
#include <math_constants.h>

#include "ops/softmax/softmax_cuda.cuh"

namespace ts {

template <typename T>
__global__ void softmax_warp_vec16_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t n,
                                          bool safe) {
  using P = Pack<T>;
  constexpr int kPacksPerLane = kSoftmaxWarpMaxRow / (32 * P::kSize);  // 4 for bf16/f16, 8 for f32
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together: shuffles below see all 32 lanes
  const P* xr = reinterpret_cast<const P*>(x + row * n);
  P* yr = reinterpret_cast<P*>(out + row * n);
  const int packs = static_cast<int>(n / P::kSize);

  // Lane l holds packs l, l + 32, ...: neighbouring lanes read neighbouring 16 bytes.
  float v[kPacksPerLane][P::kSize];
  float m = -CUDART_INF_F;
#pragma unroll
  for (int k = 0; k < kPacksPerLane; ++k) {
    const int p = lane + 32 * k;
    if (p >= packs) break;
    const P in = xr[p];
#pragma unroll
    for (int j = 0; j < P::kSize; ++j) {
      v[k][j] = to_float(in.v[j]);
      m = max_nan(m, v[k][j]);
    }
  }
  m = warp_max_nan(m);
  // m is -inf only when every element is -inf (a NaN wins the max): nothing to attend to: 0, not NaN.
  const bool zero_row = safe && m == -CUDART_INF_F;
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kPacksPerLane; ++k) {
    if (lane + 32 * k >= packs) break;
#pragma unroll
    for (int j = 0; j < P::kSize; ++j) {
      v[k][j] = expf(v[k][j] - m);  // subtracting the row max keeps exp() from overflowing
      s += v[k][j];
    }
  }
  s = warp_sum(s);
#pragma unroll
  for (int k = 0; k < kPacksPerLane; ++k) {
    const int p = lane + 32 * k;
    if (p >= packs) break;
    P o;
#pragma unroll
    for (int j = 0; j < P::kSize; ++j) o.v[j] = from_float<T>(zero_row ? 0.0f : v[k][j] / s);
    yr[p] = o;
  }
}

bool softmax_cuda_warp_vec16_supports(const OpCall& call, std::string* why) {
  const Tensor& x = call.input(0);
  const int64_t dim = call.attrs<SoftmaxAttrs>().dim;
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[dim];
  const int64_t pack = 16 / static_cast<int64_t>(x.element_size());
  const bool last_dim = x.dim() > 0 && dim == x.dim() - 1;
  if (last_dim && x.is_contiguous() && aligned16(x.data_ptr()) && aligned16(call.out.data_ptr()) && n > 0 &&
      n <= kSoftmaxWarpMaxRow && n % pack == 0)
    return true;
  if (why) *why = fmt::format("needs a contiguous, 16-byte aligned input softmaxed along its last dim, rows of a "
                              "multiple of {} elements up to {}; got shape {} strides {} along dim {}",
                              pack, kSoftmaxWarpMaxRow, x.shape(), x.strides(), dim);
  return false;
}

namespace {

void launch_softmax_warp_vec16(const Tensor& x, Tensor& out, bool safe) {
  const int64_t n = x.shape()[x.dim() - 1];
  const int64_t rows = x.numel() / n;
  if (rows == 0) return;
  visit_float_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unsigned blocks = static_cast<unsigned>(ceil_div(rows, kSoftmaxWarpRowsPerBlock));
    launch(softmax_warp_vec16_kernel<T>, blocks, 32 * kSoftmaxWarpRowsPerBlock, static_cast<const T*>(x.data_ptr()),
           static_cast<T*>(out.data_ptr()), rows, n, safe);
  });
}

}  // namespace

void softmax_cuda_warp_vec16(const Tensor& x, const SoftmaxAttrs&, Tensor& out) {
  launch_softmax_warp_vec16(x, out, /*safe=*/false);
}
void safe_softmax_cuda_warp_vec16(const Tensor& x, const SoftmaxAttrs&, Tensor& out) {
  launch_softmax_warp_vec16(x, out, /*safe=*/true);
}

}  // namespace ts
