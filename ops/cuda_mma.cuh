// ops/cuda_mma.cuh: the tensor-core instructions of sm_80 (Ampere, and every GPU since), one
// wrapper each: cp.async (global -> shared without registers), ldmatrix (shared -> mma fragments)
// and mma.sync (a warp's 16 x 8 x 16 product). Used by the flash-attention v2 rung and the
// mma.sync GEMM rung (ops/matmul/matmul_cuda_mma.cu).
//
// A build may target older GPUs too (the portable set starts at 7.5, which has none of these), so
// a kernel built on them wraps its body in
//   #if TS_CUDA_HAS_SM80 ... #else __trap(); #endif
// and compiles, for an older target, to a trap that no call reaches: its rung row says sm80
// (ops/op.h), and dispatch asks gpu_meets() before it picks the rung.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

// True while compiling device code for compute capability 8.0 or newer, and in the host pass
// (which parses kernel bodies and emits none).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define TS_CUDA_HAS_SM80 1
#else
#define TS_CUDA_HAS_SM80 0
#endif

namespace ts {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronous. valid = false writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
// The same for a 16-byte chunk of which only the first `bytes` (0..16) lie inside the matrix:
// the rest of the 16 shared-memory bytes become zeros.
__device__ __forceinline__ void cp_async_16_partial(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most kPending of this thread's committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
// Waits until this thread's copies have all landed (a barrier then makes everyone's visible).
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// Four 8x8 matrices of 16-bit values; lanes 8m..8m+7 give the row addresses of matrix m, and
// lane l receives element (row l/4, cols 2(l%4), +1) of each matrix in r[m]. .trans delivers
// the transpose: (rows 2(l%4), +1, col l/4), i.e. two values of one column.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d[16x8] += a[16x16] * b[16x8], f32 accumulators. With g = lane/4, t = lane%4:
//   a: a[0] = (row g, cols 2t,2t+1), a[1] = (g+8, 2t..), a[2] = (g, 2t+8..), a[3] = (g+8, 2t+8..)
//   b: b[0] = (rows 2t,2t+1, col g), b[1] = (rows 2t+8.., col g)
//   d: d[0], d[1] = (row g, cols 2t, 2t+1), d[2], d[3] = (row g+8, cols 2t, 2t+1)
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T and packed: lo in the low half (the lower column of a fragment).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The other way: two 16-bit T packed in 32 bits (lo in the low half) as floats.
template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t packed) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&packed));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(&packed));
  }
}

}  // namespace ts
