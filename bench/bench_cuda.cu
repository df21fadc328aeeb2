// bench/bench_cuda.cu: the empty kernels behind ts_bench's cuda/raw_launch and
// cuda/launch_like_flash_v3 entries.
//
// Launching a kernel that does nothing measures the floor every op pays on the
// CPU side: the CUDA runtime and driver turning <<<...>>> into a queued launch.
// Our dispatch overhead is judged against it (dispatch/cuda/add_1elem).
//
// The second kernel is launched the way flash_v3 launches its own: a persistent grid, 384
// threads, over 48 KiB of dynamic shared memory, and its arguments: its three TMA descriptors by
// value and the problem (one struct, or four parameters as flash_v3's kernels take them); or, for
// comparison, a pointer to descriptors in device memory instead (376 bytes fewer); or a single
// int. Against the first, it shows what the driver charges for such a launch, apart from anything
// flash_v3's host code does. The third is launched as flash_v2 launches tutorial 04's layer (a
// block per 128 queries and (batch, head), 256 threads, 48 KiB, its 176-byte problem): the same
// charge for flash_v2's launch.
#include <cuda.h>  // CUtensorMap: a type only
#include <cuda_runtime.h>

#include "bench/bench_cuda.h"
#include "tensor/cuda_check.h"

namespace ts::bench {

__global__ void empty_kernel() {}

void launch_empty_kernel() { empty_kernel<<<1, 1>>>(); }

// As large as flash_v3's arguments (its three maps by value and 64 bytes of V3Args), and as large
// with a pointer to the maps instead.
struct LikeFlashV3Args {
  CUtensorMap maps[3];
  char problem[64];
};
struct MapsPointerArgs {
  const CUtensorMap* maps;
  char problem[64];
};
__global__ void empty_kernel_like_flash_v3(const __grid_constant__ LikeFlashV3Args) {}
struct ProblemArgs {
  char problem[64];
};
__global__ void empty_kernel_four_parameters(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                                             const __grid_constant__ CUtensorMap, ProblemArgs) {}
__global__ void empty_kernel_maps_pointer(MapsPointerArgs) {}
__global__ void empty_kernel_one_word(int) {}
struct LikeFlashV2Args {
  alignas(8) char problem[kLikeFlashV2ArgBytes];
};
__global__ void empty_kernel_like_flash_v2(LikeFlashV2Args) {}

void launch_empty_like_flash_v3(int blocks, int threads, size_t smem_bytes, LaunchArguments arguments) {
  static size_t allowed = 48 * 1024;  // ts_bench runs its entries on one thread, on device 0
  if (smem_bytes > allowed) {
    for (const void* kernel : {reinterpret_cast<const void*>(&empty_kernel_like_flash_v3),
                               reinterpret_cast<const void*>(&empty_kernel_four_parameters),
                               reinterpret_cast<const void*>(&empty_kernel_maps_pointer),
                               reinterpret_cast<const void*>(&empty_kernel_one_word)})
      TS_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
    allowed = smem_bytes;
  }
  switch (arguments) {
    case LaunchArguments::like_flash_v3:
      empty_kernel_like_flash_v3<<<blocks, threads, smem_bytes>>>(LikeFlashV3Args{});
      break;
    case LaunchArguments::four_parameters:
      empty_kernel_four_parameters<<<blocks, threads, smem_bytes>>>(CUtensorMap{}, CUtensorMap{}, CUtensorMap{},
                                                                    ProblemArgs{});
      break;
    case LaunchArguments::maps_pointer:
      empty_kernel_maps_pointer<<<blocks, threads, smem_bytes>>>(MapsPointerArgs{});
      break;
    case LaunchArguments::one_int: empty_kernel_one_word<<<blocks, threads, smem_bytes>>>(0); break;
  }
}

void launch_empty_like_flash_v2(int blocks, int threads, size_t smem_bytes) {
  static size_t allowed = 48 * 1024;
  if (smem_bytes > allowed) {
    TS_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&empty_kernel_like_flash_v2),
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
    allowed = smem_bytes;
  }
  empty_kernel_like_flash_v2<<<blocks, threads, smem_bytes>>>(LikeFlashV2Args{});
}

}  // namespace ts::bench
