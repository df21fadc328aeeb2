// ops/cuda_common.cuh: the device helpers every CUDA kernel file shares.
//
//   launch                      kernel<<<grid, block>>>(args...) on the current stream, error kept
//   launch_with_smem            the same with dynamic shared memory: kernel<<<grid, block, bytes>>>(args...)
//   allow_smem                  a kernel's leave to use over 48 KiB of it, once per device
//   TS_CHECK_LAUNCH             after a kernel<<<...>>>(args...) launch: its error kept the same way
//   ceil_div, grid_for          launch arithmetic
//   CudaType / visit_*_dtype    ts::DType -> the CUDA element type (float, __nv_bfloat16, __half, bool, int64_t)
//   to_float / from_float       16-bit floats widen to f32 for arithmetic and round once on the store
//   cuda_value<T>(double)       a host scalar in an element type, rounded exactly as the CPU rounds it
//   Pack<T, V>                  16 bytes of elements, for one vectorized load or store
//   OffsetCalc<N>               linear index -> element offsets of N strided operands (views, broadcasts)
//   warp_sum / warp_max         butterfly reductions across the 32 lanes of a warp
//   RunningSum                  one thread's f32 sum over many terms, compensated so it keeps growing
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "ops/int_conversion.h"
#include "ops/op.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"

namespace ts {

// ---- launch arithmetic ---------------------------------------------------------

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int kThreads = 256;          // threads per block for the 1-D elementwise kernels
constexpr int64_t kMaxBlocks = 65536;  // past this, kernels loop (grid-stride) instead of launching more blocks

// Blocks for n independent work items at kThreads per block.
inline unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(n, kThreads), kMaxBlocks)));
}

// ---- launching -----------------------------------------------------------------

// launch(kernel, grid, block, args...) is kernel<<<grid, block, 0, current stream>>>(args...)
// that keeps the launch's error for dispatch() to report, naming the variant
// (cuda::check_launch). The chevrons drop that error, and reading it back with
// cudaGetLastError is one more runtime call per op: ~0.2 us once CUPTI has been
// initialised, a fifth of the profiler's per-op budget. The arguments convert to
// the kernel's parameter types, as with <<<>>>.
// launch_with_smem is the same with `smem_bytes` of dynamic shared memory (extern __shared__);
// past 48 KiB the kernel must first be allowed them (cudaFuncAttributeMaxDynamicSharedMemorySize).
template <typename... Params, typename... Args>
void launch_with_smem(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: the kernel takes a different number of arguments");
  std::tuple<std::remove_cv_t<Params>...> values(std::forward<Args>(args)...);
  std::apply(
      [&](auto&... value) {
        void* pointers[] = {static_cast<void*>(&value)..., nullptr};  // cudaLaunchKernel's argument array
        cuda::note_launch(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, pointers, smem_bytes,
                                           cuda::current_stream()));
      },
      values);
}

// Allows `kernel` `bytes` of dynamic shared memory on `device` (the current one), once per device:
// past 48 KiB a kernel must ask (cudaFuncAttributeMaxDynamicSharedMemorySize), and the attribute
// is per device. `done` (one per kernel, static at the caller) remembers the devices asked.
template <typename... Params>
void allow_smem(void (*kernel)(Params...), size_t bytes, int device, std::atomic<uint64_t>& done) {
  const uint64_t bit = uint64_t{1} << (device & 63);
  if (done.load(std::memory_order_acquire) & bit) return;
  TS_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)));
  done.fetch_or(bit, std::memory_order_release);
}

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args&&... args) {
  launch_with_smem(kernel, grid, block, 0, std::forward<Args>(args)...);
}

// After a launch written with chevrons, as every CUDA tutorial writes it:
//   my_kernel<<<grid, block, 0, cuda::current_stream()>>>(args...);
//   TS_CHECK_LAUNCH();
// keeps the launch's error for dispatch() like ts::launch, at the price of one
// cudaGetLastError call. A chevron launch that nothing checks fails the
// lint_kernel_launches test: its failure would go unreported.
#define TS_CHECK_LAUNCH() ::ts::cuda::note_launch(cudaGetLastError())

// ---- element types -------------------------------------------------------------

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the CUDA type of a floating dtype (f32, bf16, f16).
template <typename Fn>
void visit_float_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: fn(TypeTag<float>{}); return;
    case DType::bf16: fn(TypeTag<__nv_bfloat16>{}); return;
    case DType::f16: fn(TypeTag<__half>{}); return;
    default: fail("CUDA kernel: expected a floating dtype (f32, bf16, f16), got {}", dtype_short_name(dtype));
  }
}

// The same over every dtype (bool and int64 too): for kernels that only move elements.
template <typename Fn>
void visit_any_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: fn(TypeTag<float>{}); return;
    case DType::bf16: fn(TypeTag<__nv_bfloat16>{}); return;
    case DType::f16: fn(TypeTag<__half>{}); return;
    case DType::b8: fn(TypeTag<bool>{}); return;
    case DType::i64: fn(TypeTag<int64_t>{}); return;
  }
}

template <typename T>
constexpr bool is_half_type = std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// A double from the host (a fill value, a scalar) as element type T, rounded
// by the same code the CPU kernels use, so both devices store identical bits.
template <typename T>
T cuda_value(double v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat16_raw raw;
    raw.x = float_to_bf16_bits(static_cast<float>(v));
    return T(raw);
  } else if constexpr (std::is_same_v<T, __half>) {
    __half_raw raw;
    raw.x = float_to_f16_bits(static_cast<float>(v));
    return T(raw);
  } else {
    return numeric_cast<T>(v);
  }
}

// 16 bytes of T: one vectorized (LDG.128 / STG.128) memory access.
template <typename T, int V = 16 / static_cast<int>(sizeof(T))>
struct alignas(16) Pack {
  static constexpr int kSize = V;
  T v[V];
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// ---- strided indexing ------------------------------------------------------------

// Maps a linear (row-major) index over `shape` to the element offset of each of
// N operands, each with its own strides (0 on broadcast dims). Dims that are
// contiguous with the next one in every operand are merged first, so a
// contiguous 3-D tensor costs one division per element, not three.
template <int N>
struct OffsetCalc {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];

  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&out)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = 0;
    // Peel dims from the innermost: index along d = linear % size, the rest carries outward.
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) out[k] += i * strides[k][d];
    }
  }
};

template <int N>
OffsetCalc<N> make_offset_calc(const Dims& shape, const std::array<Dims, N>& strides) {
  OffsetCalc<N> calc;
  // Drop size-1 dims (their stride never matters), then merge neighbours: dim d
  // folds into d+1 when, for every operand, stride[d] == stride[d+1] * size[d+1].
  int64_t sizes[kMaxDims];
  int64_t st[N][kMaxDims];
  int n = 0;
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    sizes[n] = shape[d];
    for (int k = 0; k < N; ++k) st[k][n] = strides[k][d];
    ++n;
  }
  int m = 0;  // merged dims written so far
  for (int d = 0; d < n; ++d) {
    bool mergeable = m > 0;
    for (int k = 0; k < N && mergeable; ++k) mergeable = calc.strides[k][m - 1] == st[k][d] * sizes[d];
    if (mergeable) {
      calc.sizes[m - 1] *= sizes[d];
      for (int k = 0; k < N; ++k) calc.strides[k][m - 1] = st[k][d];
    } else {
      calc.sizes[m] = sizes[d];
      for (int k = 0; k < N; ++k) calc.strides[k][m] = st[k][d];
      ++m;
    }
  }
  calc.ndim = m;
  return calc;
}

// ---- warp reductions ---------------------------------------------------------------

// After log2(32) = 5 butterfly steps every lane holds the result for the whole warp.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// fmaxf ignores a NaN operand, like std::fmax in the CPU reference.
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// One thread's sum over a long stride of terms. A plain f32 running sum loses what falls under
// half an ulp of the total: it stops growing at 2^24 ones, and 2^19 additions of 0.1f read 0.4%
// high. RunningSum keeps each addition's rounding error in `lost` (Neumaier's compensated
// summation) and adds it back at the end, so the error stays a few ulps whatever the count. Four
// more f32 operations per term: a reduction reads memory far slower than it adds. nvcc keeps the
// order of these operations (it reassociates nothing unless built with --use_fast_math).
struct RunningSum {
  float total = 0.0f, lost = 0.0f;
  __device__ __forceinline__ void add(float v) {
    const float t = total + v;
    lost += fabsf(total) >= fabsf(v) ? (total - t) + v : (v - t) + total;
    total = t;
  }
  // An inf or NaN total is the answer as it stands (its `lost` is NaN, and would turn inf to NaN).
  __device__ __forceinline__ float value() const { return isfinite(total) ? total + lost : total; }
};

}  // namespace ts
