// launch_attributes.cu: what the CUDA driver charges on the CPU to launch a kernel shaped like
// flash_v3's (a block per SM, 384 threads, 148624 bytes of dynamic shared memory, three tensor
// maps by value and a 64-byte problem), as the kernel takes on flash_v3's attributes one at a
// time: 168 registers, setmaxnreg, 16 named barriers; and a kernel shaped like flash_v2's (512
// blocks of 256 threads, 48 KiB, a 176-byte problem) as the baseline.
//
// Every kernel does nothing at run time (its work sits behind a flag that is always 0); ptxas
// still allocates what the work would need. Timing: batches of 20 launches, a synchronize after
// each, the variants' batches interleaved, the median over 51 rounds of each variant's CPU time per
// launch.
//
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v launch_attributes.cu
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                  \
  do {                                                                                            \
    cudaError_t e = (x);                                                                          \
    if (e != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e));    \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

struct Problem {
  float* out;
  const float* in;
  int work;  // always 0
  char rest[64 - 20];
};
static_assert(sizeof(Problem) == 64);
struct V2Problem {
  float* out;
  const float* in;
  int work;
  char rest[176 - 20];
};

// The work: 160 accumulators live across a loop, so ptxas allocates about 168 registers.
__device__ __forceinline__ void hold_registers(const Problem& p) {
  float acc[160];
#pragma unroll
  for (int i = 0; i < 160; ++i) acc[i] = p.in[i];
  for (int k = 0; k < p.work; ++k) {
    const float x = p.in[k + threadIdx.x];
#pragma unroll
    for (int i = 0; i < 160; ++i) acc[i] = fmaf(acc[i], x, static_cast<float>(i));
  }
#pragma unroll
  for (int i = 0; i < 160; ++i) p.out[i * 384 + threadIdx.x] = acc[i];
}

__device__ __forceinline__ void take_registers() {
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
  else
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
}

__device__ __forceinline__ void use_barriers() {
  asm volatile("bar.sync 15, 256;\n" ::: "memory");
  asm volatile("bar.sync 8, 256;\n" ::: "memory");
  asm volatile("bar.sync 1, 256;\n" ::: "memory");
}

__global__ void __launch_bounds__(256, 2) like_v2(V2Problem p) {
  if (p.work) p.out[threadIdx.x] = 1.0f;
}
__global__ void __launch_bounds__(384, 1)
    like_v3(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
            const __grid_constant__ CUtensorMap, Problem p) {
  if (p.work) p.out[threadIdx.x] = 1.0f;
}
__global__ void __launch_bounds__(384, 1)
    like_v3_registers(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                      const __grid_constant__ CUtensorMap, Problem p) {
  if (p.work) hold_registers(p);
}
__global__ void __launch_bounds__(384, 1)
    like_v3_setmaxnreg(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                       const __grid_constant__ CUtensorMap, Problem p) {
  if (p.work) take_registers();
}
__global__ void __launch_bounds__(384, 1)
    like_v3_barriers(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                     const __grid_constant__ CUtensorMap, Problem p) {
  if (p.work) use_barriers();
}
__global__ void __launch_bounds__(384, 1)
    like_v3_all(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                const __grid_constant__ CUtensorMap, Problem p) {
  if (p.work) {  // as flash_v3: the producer warpgroup gives registers back and leaves
    use_barriers();
    if (threadIdx.x < 128) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
      return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
    hold_registers(p);
  }
}

using V3Kernel = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, Problem);

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 51;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t v3_smem = 148624, v2_smem = 384 * 64 * 2;
  float* buf = nullptr;
  CHECK(cudaMalloc(&buf, 1 << 20));
  Problem p{};
  p.out = buf;
  p.in = buf;
  V2Problem p2{};
  p2.out = buf;
  p2.in = buf;
  CUtensorMap m{};
  struct Variant {
    const char* name;
    V3Kernel kernel;  // null: like_v2
  };
  const std::vector<Variant> variants = {{"like_v2", nullptr},
                                         {"like_v3", like_v3},
                                         {"like_v3_registers", like_v3_registers},
                                         {"like_v3_setmaxnreg", like_v3_setmaxnreg},
                                         {"like_v3_barriers", like_v3_barriers},
                                         {"like_v3_all", like_v3_all}};
  CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(like_v2), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(v2_smem)));
  for (const Variant& v : variants) {
    if (!v.kernel) continue;
    CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(v.kernel),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(v3_smem)));
    cudaFuncAttributes a{};
    CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(v.kernel)));
    std::printf("%-20s regs %3d  local %zu B  max threads %d\n", v.name, a.numRegs, a.localSizeBytes,
                a.maxThreadsPerBlock);
  }
  const auto launch = [&](const Variant& v) {
    if (!v.kernel)
      like_v2<<<512, 256, v2_smem>>>(p2);
    else
      v.kernel<<<sms, 384, v3_smem>>>(m, m, m, p);
  };
  for (const Variant& v : variants)
    for (int i = 0; i < 200; ++i) launch(v);
  CHECK(cudaDeviceSynchronize());
  std::vector<std::vector<double>> us(variants.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t j = 0; j < variants.size(); ++j) {
      const size_t vi = (r % 2 == 0) ? j : variants.size() - 1 - j;  // alternate the order
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20; ++i) launch(variants[vi]);
      const auto t1 = std::chrono::steady_clock::now();
      CHECK(cudaDeviceSynchronize());
      us[vi].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 20);
    }
  CHECK(cudaGetLastError());
  double base = 0;
  std::printf("%-20s %10s %12s\n", "variant", "median us", "over like_v2");
  for (size_t j = 0; j < variants.size(); ++j) {
    std::vector<double> x = us[j];
    std::nth_element(x.begin(), x.begin() + x.size() / 2, x.end());
    const double med = x[x.size() / 2];
    if (j == 0) base = med;
    std::printf("%-20s %10.3f %+12.3f\n", variants[j].name, med, med - base);
  }
  return 0;
}
