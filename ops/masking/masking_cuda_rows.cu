// ops/masking/masking_cuda_rows.cu: rung 2 of masked_fill_ on CUDA: packs over a repeated mask.
//
// What changed from rung 1 (masking_cuda_naive.cu): attention's mask is one
//        [S, L] block broadcast over every (batch, head) of a dense
//        [B, H, S, L] scores tensor. Element e of x then reads the mask at
//        e % (S * L): one modulo per 16-byte pack instead of a division per dim
//        per element, and 16-byte loads and stores of x (8 bf16) with the
//        matching 8 (or 4) mask bytes in one load. The pack is written whole:
//        where the mask is false the thread stores the value it just read, and
//        no other thread touches those 16 bytes.
// Cost:  memory-bound: x read and written once (2 * numel * sizeof(T)); the
//        mask block stays in L2 after its first read. B4 H16 S1024 bf16: 268 MB,
//        a floor of ~65 us at ~4.2 TB/s.
// Try:   TS_VARIANT=masked_fill_/cuda/rows ./build/dev/tutorials/04_attention --path inplace
//        ./build/dev/ts_ladder --op masked_fill_ --device cuda
#include "ops/checks.h"
#include "ops/cuda_common.cuh"
#include "ops/masking/masking.h"

namespace ts {

// The mask bytes that go with one pack of T: 8 bools for 2-byte T, 4 for f32, 2 for int64/8-byte T.
template <int N>
struct alignas(N) MaskPack {
  bool v[N];
};

// x[e] = mask[e % period] ? value : x[e], a 16-byte pack per thread; x dense, n and period multiples of the pack.
template <typename T>
__global__ void masked_fill_rows_kernel(T* __restrict__ x, const bool* __restrict__ mask, int64_t period, int64_t n,
                                        T value) {
  using P = Pack<T>;
  using M = MaskPack<P::kSize>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < n / P::kSize; p += stride) {
    const int64_t e = p * P::kSize;  // period is a multiple of kSize: a pack never straddles the mask's end
    P vx = reinterpret_cast<P*>(x)[p];
    const M vm = *reinterpret_cast<const M*>(mask + e % period);
#pragma unroll
    for (int j = 0; j < P::kSize; ++j)
      if (vm.v[j]) vx.v[j] = value;
    reinterpret_cast<P*>(x)[p] = vx;
  }
}

bool masked_fill__cuda_rows_supports(const OpCall& call, std::string* why) {
  const Tensor &x = call.input(0), &mask = call.input(1);
  const int64_t pack = 16 / static_cast<int64_t>(x.element_size());
  const int64_t period = broadcast_period(mask, x.shape());
  if (x.is_contiguous() && aligned16(x.data_ptr()) && x.numel() % pack == 0 && period > 0 && period % pack == 0 &&
      reinterpret_cast<uintptr_t>(mask.data_ptr()) % static_cast<uintptr_t>(pack) == 0)
    return true;
  if (why) *why = fmt::format("needs x contiguous and 16-byte aligned, and the mask dense of x's trailing dims (a "
                              "block repeated over the leading ones), both a multiple of {} elements; got x {} "
                              "strides {}, mask {} strides {}",
                              pack, x.shape(), x.strides(), mask.shape(), mask.strides());
  return false;
}

void masked_fill__cuda_rows(const Tensor&, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& x) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const int64_t period = broadcast_period(mask, x.shape());
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(masked_fill_rows_kernel<T>, grid_for(n / Pack<T>::kSize), kThreads, static_cast<T*>(x.data_ptr()),
           static_cast<const bool*>(mask.data_ptr()), period, n, cuda_value<T>(attrs.value));
  });
}

}  // namespace ts
