// ops/factories/factories_cuda_naive.cu: the CUDA rungs of fill_, arange, rand and randn.
//
// What changed from rung 0 (factories_cpu_ref.cpp): one thread per element.
//        The random generator is the CPU's, line for line: value i is a
//        splitmix64 hash of (seed, offset + 2i), so a seed gives the same
//        tensor on both devices (rand bit for bit; randn within an ulp or two,
//        since logf/cosf on the GPU and in libm may round differently).
//        fill_ has two rungs: strided (any view, offsets from the strides) and
//        dense (a contiguous tensor: element i at offset i).
// Cost:  one write per element (fill_ on a strided view: the same, scattered).
// Try:   ./build/dev/ts_tests -tc='cuda: every variant*'
#include "ops/cuda_common.cuh"
#include "ops/factories/factories.h"

namespace ts {

// ---- fill_ and arange: move bits, no arithmetic on the element type ----------------

template <typename T>
__global__ void fill_contiguous_kernel(T* __restrict__ x, int64_t n, T value) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] = value;
}

// fill_ on any view (a slice, a transpose): the offsets come from x's strides.
template <typename T>
__global__ void fill_strided_kernel(T* __restrict__ x, int64_t n, OffsetCalc<1> calc, T value) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[1];
    calc.offsets(i, o);
    x[o[0]] = value;
  }
}

// start + i * step, computed in double (floating bounds) or in wrapping uint64 (integer bounds: the
// sum is the exact int64 value) and converted once, exactly as on the CPU.
template <typename T, typename Value>
__device__ __forceinline__ void store_arange_value(T* out, int64_t i, Value v) {
  if constexpr (is_half_type<T>) {
    out[i] = from_float<T>(static_cast<float>(v));
  } else {
    out[i] = numeric_cast<T>(v);
  }
}

template <typename T>
__global__ void arange_kernel(T* __restrict__ out, int64_t n, double start, double step) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store_arange_value(out, i, start + static_cast<double>(i) * step);
}

template <typename T>
__global__ void arange_integer_kernel(T* __restrict__ out, int64_t n, uint64_t start, uint64_t step) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store_arange_value(out, i, static_cast<int64_t>(start + static_cast<uint64_t>(i) * step));
}

// ---- the counter-based generator (factories_cpu_ref.cpp, on the device) -----------

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) on a grid of 2^-bits: the top `bits` bits of the hash, times 2^-bits
// (exact). rand draws as many bits as the dtype's significand holds (24, 8 for bf16, 11
// for f16), so every value is exact in the dtype and none rounds up to 1.0.
__device__ __forceinline__ float uniform01(uint64_t seed, uint64_t counter, int bits = 24) {
  return ldexpf(static_cast<float>(splitmix64(seed ^ splitmix64(counter)) >> (64 - bits)), -bits);
}

template <typename T>
constexpr int significand_bits = std::is_same_v<T, __nv_bfloat16> ? 8 : std::is_same_v<T, __half> ? 11 : 24;

// Value i uses counters offset + 2i (and + 1 for randn's second uniform): no
// state is shared between threads, so any thread can make any element.
template <typename T>
__global__ void rand_uniform_kernel(T* __restrict__ out, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = from_float<T>(uniform01(seed, offset + 2 * static_cast<uint64_t>(i), significand_bits<T>));
}

// Box-Muller: sqrt(-2 ln u1) cos(2 pi u2); 1 - u1 keeps the log's argument in (0, 1].
template <typename T>
__global__ void randn_box_muller_kernel(T* __restrict__ out, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t c = offset + 2 * static_cast<uint64_t>(i);
    const float u1 = 1.0f - uniform01(seed, c), u2 = uniform01(seed, c + 1);
    out[i] = from_float<T>(sqrtf(-2.0f * logf(u1)) * cosf(2.0f * 3.14159265358979323846f * u2));
  }
}

// ---- entry points ---------------------------------------------------------------------

// x: any dtype, any strides (no two elements sharing memory: prepare checked).
void fill_cuda_strided(const FillAttrs& attrs, Tensor& x) {
  const int64_t n = x.numel();
  if (n == 0) return;
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(fill_strided_kernel<T>, grid_for(n), kThreads, static_cast<T*>(x.data_ptr()), n,
           make_offset_calc<1>(x.shape(), {x.strides()}), cuda_value<T>(attrs.value));
  });
}

bool fill_cuda_dense_supports(const OpCall& call, std::string* why) {
  if (call.out.is_contiguous()) return true;
  if (why) *why = fmt::format("needs a contiguous tensor; got shape {} strides {}", call.out.shape(), call.out.strides());
  return false;
}

// x: contiguous, any dtype.
void fill_cuda_dense(const FillAttrs& attrs, Tensor& x) {
  const int64_t n = x.numel();
  if (n == 0) return;
  visit_any_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(fill_contiguous_kernel<T>, grid_for(n), kThreads, static_cast<T*>(x.data_ptr()), n,
           cuda_value<T>(attrs.value));
  });
}

// out [n] contiguous, any dtype.
void arange_cuda_naive(const ArangeAttrs& attrs, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  visit_any_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (attrs.integer) {
      launch(arange_integer_kernel<T>, grid_for(n), kThreads, static_cast<T*>(out.data_ptr()), n,
             static_cast<uint64_t>(attrs.int_start), static_cast<uint64_t>(attrs.int_step));
    } else {
      launch(arange_kernel<T>, grid_for(n), kThreads, static_cast<T*>(out.data_ptr()), n, attrs.start, attrs.step);
    }
  });
}

// out [*] contiguous, floating.
void rand_cuda_naive(const RandomAttrs& attrs, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(rand_uniform_kernel<T>, grid_for(n), kThreads, static_cast<T*>(out.data_ptr()), n, attrs.seed,
           attrs.offset);
  });
}

void randn_cuda_naive(const RandomAttrs& attrs, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(randn_box_muller_kernel<T>, grid_for(n), kThreads, static_cast<T*>(out.data_ptr()), n, attrs.seed,
           attrs.offset);
  });
}

}  // namespace ts
