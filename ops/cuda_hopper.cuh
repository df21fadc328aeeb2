// ops/cuda_hopper.cuh: Hopper's own instructions (sm_90a), one wrapper each, explained once.
// The kernels that use them: ops/matmul/matmul_cuda_wgmma.cu (the GEMM and the GeGLU-epilogue GEMM)
// and ops/attention/attention_cuda_flash_v3.cu (flash attention).
//
// The three pieces of a Hopper GEMM, and how they meet:
//
//   TMA (the tensor memory accelerator, `cp.async.bulk.tensor`): one thread asks the copy engine
//     for a whole tile ("box") of a 2-D or 3-D tensor; the engine moves it from global to shared
//     memory without registers, fills what lies outside the tensor with zeros (tails need no code),
//     and writes it in a swizzled layout (below). The tensor's shape, strides, box and swizzle
//     live in a 128-byte descriptor, the tensor map, made on the host (ops/hopper_tensor_map.h)
//     and passed to the kernel by value as a `const __grid_constant__ CUtensorMap` parameter
//     (the GEMM), or placed in device memory and passed as a pointer (flash attention, whose
//     three maps by value would make each launch's arguments 384 bytes longer).
//
//   mbarrier: a shared-memory barrier that counts arrivals *and bytes*. A TMA load names one;
//     the producer announces the bytes it expects (arrive_expect_tx) and the barrier's phase
//     completes when every announced byte has landed. Consumers wait on the phase's parity
//     (0, 1, 0, ...: a stage of a ring is reused every `stages` loads). A second barrier per
//     stage goes the other way: consumers arrive on it when they are done reading the stage,
//     and the producer waits on it before overwriting. That pair is the whole pipeline.
//
//   wgmma (`wgmma.mma_async`): a warpgroup (4 consecutive warps, 128 threads, the first warp's
//     index a multiple of 4) multiplies a 64 x N x 16 tile on the tensor cores, A and B read
//     straight from shared memory through 64-bit "matrix descriptors" (address, the byte
//     distances between 8-row groups, the swizzle), the f32 accumulators in registers
//     (64 x N / 128 per thread: 128 registers for N = 256). It is asynchronous: fence, issue
//     several, commit them as a group, and wait for groups later (wgmma_wait<n>: at most n
//     groups still in flight), so the next stage's loads and this stage's math overlap.
//
// The swizzle: a tile row of 64 bf16/f16 values is 128 bytes. Stored plainly, the 8 rows a
// tensor-core read touches at once would all start in the same bank group; the 128-byte swizzle
// XORs the 16-byte chunk index (address bits 4-6) with the row index within 8 rows (bits 7-9),
// so those 8 reads land in 8 different bank groups. TMA writes this layout and the descriptor
// tells wgmma to read it; neither the kernel nor the programmer computes it. It needs the tile's
// base aligned to 1024 bytes (8 rows of 128 bytes).
//
// Registers: setmaxnreg moves registers between warpgroups of a running block: the producer
// (a few address registers) gives its share back, the consumers (128 accumulators each) take
// it. It needs __launch_bounds__(threads, 1) on the kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda_mma.cuh"            // smem_u32
#include "ops/hopper_tensor_map.h"  // the host side: make_tensor_map

namespace ts::hopper {

// -- mbarrier --
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals));
}
// Makes the initialised barriers visible to the copy engine (the async proxy); a __syncthreads
// after it makes them visible to the block.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival that also announces `bytes` of TMA data this phase must receive before it completes.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed. A fresh barrier is in phase 0, and
// the phase before it (parity 1) counts as complete: waiting on parity 1 returns at once.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}

// -- TMA --
// Box at coordinates (col, row, batch) of the tensor map, into shared memory at dst; completes
// on bar (counting the box's bytes, zero-filled parts included).
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int col, int row,
                                            int batch) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(col), "r"(row), "r"(batch)
      : "memory");
}

// The same for a 4-D tensor map (col, row, head, batch): the attention kernel's [B, H, seq, D]
// inputs, whose head and batch strides need not nest.
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar, int col, int row,
                                            int head, int batch) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
      "%6}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(col), "r"(row), "r"(head), "r"(batch)
      : "memory");
}

// The other direction: a box of shared memory (written in the tensor map's swizzled layout) to
// the tensor at (col, row, batch); the parts of the box outside the tensor are not written.
// Stores are tracked per thread in bulk groups: commit them, and wait before the shared memory is
// written again (the engine reads it after the instruction returns).
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, const void* src, int col, int row, int batch) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_u32(src)), "r"(col), "r"(row), "r"(batch)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until the committed stores have finished reading shared memory (not until they reach
// global memory: a kernel's stores are visible to the next kernel regardless).
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Ordinary shared-memory stores become visible to the copy engine (the async proxy) only after
// this fence, executed by each writing thread before the barrier that precedes the TMA store.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// A barrier for `threads` threads of the block (a multiple of 32) on barrier `id` (1..15; 0 is
// __syncthreads): one warpgroup can synchronize without the rest of the block.
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Counts this warp's threads on barrier `id` without waiting: the other side of a named_barrier_sync
// (the barrier completes when `threads` have arrived or synced).
__device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// -- wgmma --
// The matrix descriptor of a tile in shared memory written by TMA with the 128-byte swizzle (or
// the 64-byte one: kSwizzleBytes, the length of the tile's rows).
//   bits  0-13  start address >> 4
//   bits 16-29  "leading" byte offset >> 4: K-major operands: unused with a swizzle (1);
//               MN-major: the distance between two column blocks of the tile, one row long each
//               (64 16-bit elements at 128 bytes, 32 at 64)
//   bits 32-45  "stride" byte offset >> 4: the distance between two 8-row groups (1024 bytes
//               for 128-byte rows, 512 for 64-byte ones)
//   bits 62-63  the swizzle: 1 = 128 bytes, 2 = 64 bytes
template <int kSwizzleBytes = 128>
__device__ __forceinline__ uint64_t smem_descriptor(const void* tile, uint32_t leading_bytes, uint32_t stride_bytes) {
  static_assert(kSwizzleBytes == 128 || kSwizzleBytes == 64, "the swizzles the kernels here use");
  uint64_t d = 0;
  d |= static_cast<uint64_t>((smem_u32(tile) & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((leading_bytes & 0x3FFFF) >> 4) << 16;
  d |= static_cast<uint64_t>((stride_bytes & 0x3FFFF) >> 4) << 32;
  d |= uint64_t{kSwizzleBytes == 128 ? 1u : 2u} << 62;
  return d;
}

// The descriptor of the tile `bytes` further on in shared memory, with the same offsets and
// swizzle: only the start address (bits 0-13, in 16-byte units) moves. Shared memory ends below
// 2^18 bytes, so the sum stays in those bits. A kernel that makes its tiles' descriptors once and
// advances them spends one add per wgmma operand instead of the address arithmetic above.
__device__ __forceinline__ uint64_t smem_descriptor_advance(uint64_t desc, uint32_t bytes) {
  const uint32_t low = static_cast<uint32_t>(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | low;
}

// Orders this warpgroup's register and shared-memory accesses before the wgmmas that follow.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the wgmmas issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most `kInFlight` committed groups are still running.
template <int kInFlight>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kInFlight) : "memory");
}
// Tells the compiler the accumulators change behind its back (the async wgmma writes them), so it
// neither caches them across a wait nor moves their reads before it.
template <int kRegs>
__device__ __forceinline__ void fence_accumulators(float (&d)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The accumulator operand lists of the wgmmas below (TS_WGMMA_D<n>: d[0] .. d[n - 1], operands
// %0 .. %n-1, each list extending the one before) and the matching register lists of the
// instruction text (TS_WGMMA_REGS<n>: "{%0, ..., %n-1}"). m64nNk16 with f32 accumulators has
// N / 2 of them per thread: 40 for N = 80, 48 for 96, 56 for 112, 64 for 128, 88 for 176, 96 for
// 192, 128 for 256 (the attention kernel's key tiles and head dims, the GEMM's 256 columns).
#define TS_WGMMA_D32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define TS_WGMMA_D40 \
  TS_WGMMA_D32, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define TS_WGMMA_D48 \
  TS_WGMMA_D40, \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define TS_WGMMA_D56 \
  TS_WGMMA_D48, \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define TS_WGMMA_D64 \
  TS_WGMMA_D56, \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define TS_WGMMA_D88 \
  TS_WGMMA_D64, \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define TS_WGMMA_D96 \
  TS_WGMMA_D88, \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define TS_WGMMA_D128 \
  TS_WGMMA_D96, \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define TS_WGMMA_R32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TS_WGMMA_R40 \
  TS_WGMMA_R32 ", " \
  "%32, %33, %34, %35, %36, %37, %38, %39"
#define TS_WGMMA_R48 \
  TS_WGMMA_R40 ", " \
  "%40, %41, %42, %43, %44, %45, %46, %47"
#define TS_WGMMA_R56 \
  TS_WGMMA_R48 ", " \
  "%48, %49, %50, %51, %52, %53, %54, %55"
#define TS_WGMMA_R64 \
  TS_WGMMA_R56 ", " \
  "%56, %57, %58, %59, %60, %61, %62, %63"
#define TS_WGMMA_R88 \
  TS_WGMMA_R64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87"
#define TS_WGMMA_R96 \
  TS_WGMMA_R88 ", " \
  "%88, %89, %90, %91, %92, %93, %94, %95"
#define TS_WGMMA_R128 \
  TS_WGMMA_R96 ", " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TS_WGMMA_REGS32 "{" TS_WGMMA_R32 "}"
#define TS_WGMMA_REGS40 "{" TS_WGMMA_R40 "}"
#define TS_WGMMA_REGS48 "{" TS_WGMMA_R48 "}"
#define TS_WGMMA_REGS56 "{" TS_WGMMA_R56 "}"
#define TS_WGMMA_REGS64 "{" TS_WGMMA_R64 "}"
#define TS_WGMMA_REGS88 "{" TS_WGMMA_R88 "}"
#define TS_WGMMA_REGS96 "{" TS_WGMMA_R96 "}"
#define TS_WGMMA_REGS128 "{" TS_WGMMA_R128 "}"

// d[64 x N] (+)= A[64 x 16] * B[16 x N], f32 accumulators, A and B 16-bit in shared memory ("SS").
// A is K-major; B is K-major (kTransB = 0: rows of N hold K contiguous, as the attention kernel's
// K and a GEMM's t() view) or MN-major (kTransB = 1: rows of K hold N contiguous, a GEMM's [K, N]
// rows). N = 80, 112, 128 or 176 keys (S = Q K^T of the attention kernel), or 128 and 256 columns
// (the GEMM's tiles). accumulate = 0 ignores d's old value. The accumulator layout: warp w of the
// warpgroup owns rows 16w..16w+15; with g = lane / 4 and t = lane % 4, d[4i + 0], d[4i + 1] are
// (row 16w + g, cols 8i + 2t, 8i + 2t + 1) and d[4i + 2], d[4i + 3] the same columns of row
// 16w + g + 8, for i = 0..N/8 - 1.
template <bool kIsBf16, int N, int kTransB = 0>
__device__ __forceinline__ void wgmma_m64nNk16_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                                  uint32_t accumulate) {
  static_assert(N == 80 || N == 112 || N == 128 || N == 176 || N == 256, "the attention's key tiles, the GEMM's");
  static_assert(kTransB == 0 || kTransB == 1, "B K-major (0) or MN-major (1)");
// Operands: d (N / 2 of them), then the two descriptors, the predicate and B's layout.
#define TS_WGMMA_SS(NREGS, SHAPE, DESCS, ACC, TRANS_B)                                                       \
  if constexpr (kIsBf16) {                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " ACC ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32.bf16.bf16 " TS_WGMMA_REGS##NREGS ", " DESCS        \
                 ", p, 1, 1, 0, " TRANS_B ";\n}\n"                                                         \
                 : TS_WGMMA_D##NREGS                                                                         \
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(kTransB));                                \
  } else {                                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " ACC ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32.f16.f16 " TS_WGMMA_REGS##NREGS ", " DESCS          \
                 ", p, 1, 1, 0, " TRANS_B ";\n}\n"                                                         \
                 : TS_WGMMA_D##NREGS                                                                         \
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(kTransB));                                \
  }
  if constexpr (N == 80) {
    TS_WGMMA_SS(40, "m64n80k16", "%40, %41", "%42", "%43");
  } else if constexpr (N == 112) {
    TS_WGMMA_SS(56, "m64n112k16", "%56, %57", "%58", "%59");
  } else if constexpr (N == 128) {
    TS_WGMMA_SS(64, "m64n128k16", "%64, %65", "%66", "%67");
  } else if constexpr (N == 176) {
    TS_WGMMA_SS(88, "m64n176k16", "%88, %89", "%90", "%91");
  } else {
    TS_WGMMA_SS(128, "m64n256k16", "%128, %129", "%130", "%131");
  }
#undef TS_WGMMA_SS
}

// d[64 x N] (+)= A[64 x 16] * B[16 x N] with A in registers ("RS"): O += P V of the attention
// kernel, P straight from the softmax. B is MN-major (V's rows hold N = the head dim
// contiguous, in panels of one swizzle row: 64 columns, or 32 at D = 96), N = 64, 96, 128, 192 or
// 256. A's fragment is mma.sync's m16n8k16
// one per warp (warp w holds rows 16w..16w+15): a[0] = (row g, cols 2t, 2t+1), a[1] = (row g + 8,
// same cols), a[2] and a[3] the same rows at cols 2t + 8, 2t + 9, two 16-bit values per register,
// low half first. That is, element for element, the accumulator layout of the 16 columns it came
// from. The wgmma reads a[] after it returns: the registers must stay untouched until the wait
// that covers it (fence_operands keeps the compiler from reusing them before).
template <bool kIsBf16, int N>
__device__ __forceinline__ void wgmma_m64nNk16_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                  uint32_t accumulate) {
  static_assert(N == 64 || N == 96 || N == 128 || N == 192 || N == 256, "the attention kernel's head dims");
// Operands: d (N / 2 of them), then a[0..3], the descriptor and the predicate.
#define TS_WGMMA_RS(NREGS, SHAPE, A, DESC, ACC)                                                              \
  if constexpr (kIsBf16) {                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " ACC ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32.bf16.bf16 " TS_WGMMA_REGS##NREGS ", " A            \
                 ", " DESC ", p, 1, 1, 1;\n}\n"                                                             \
                 : TS_WGMMA_D##NREGS                                                                         \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));               \
  } else {                                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " ACC ", 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32.f16.f16 " TS_WGMMA_REGS##NREGS ", " A              \
                 ", " DESC ", p, 1, 1, 1;\n}\n"                                                             \
                 : TS_WGMMA_D##NREGS                                                                         \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));               \
  }
  if constexpr (N == 64) {
    TS_WGMMA_RS(32, "m64n64k16", "{%32, %33, %34, %35}", "%36", "%37");
  } else if constexpr (N == 96) {
    TS_WGMMA_RS(48, "m64n96k16", "{%48, %49, %50, %51}", "%52", "%53");
  } else if constexpr (N == 128) {
    TS_WGMMA_RS(64, "m64n128k16", "{%64, %65, %66, %67}", "%68", "%69");
  } else if constexpr (N == 192) {
    TS_WGMMA_RS(96, "m64n192k16", "{%96, %97, %98, %99}", "%100", "%101");
  } else {
    TS_WGMMA_RS(128, "m64n256k16", "{%128, %129, %130, %131}", "%132", "%133");
  }
#undef TS_WGMMA_RS
}

// Keeps registers an asynchronous wgmma reads (its register A operand) alive and unmoved up to
// this point: placed after the wait that covers the wgmma.
template <int kRegs>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[kRegs][4]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// -- registers --
template <uint32_t kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <uint32_t kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace ts::hopper
