// bench/bench_cuda.cu: the empty kernels behind ts_bench's cuda/raw_launch and
// cuda/launch_like_flash_v3 entries.
//
// Launching a kernel that does nothing measures the floor every op pays on the
// CPU side: the CUDA runtime and driver turning <<<...>>> into a queued launch.
// Our dispatch overhead is judged against it (dispatch/cuda/add_1elem).
//
// The second kernel is launched the way flash_v3 launches its own: a persistent grid, 384
// threads, over 48 KiB of dynamic shared memory, and its arguments by value (three 128-byte
// TMA descriptors and the problem). Against the first, it shows what the driver charges for
// such a launch, apart from anything flash_v3's host code does.
#include <cuda.h>  // CUtensorMap: a type only
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"

namespace ts::bench {

__global__ void empty_kernel() {}

void launch_empty_kernel() { empty_kernel<<<1, 1>>>(); }

// As large as flash_v3's arguments: three tensor maps and 64 bytes of V3Args.
struct LikeFlashV3Args {
  CUtensorMap maps[3];
  char problem[64];
};
__global__ void empty_kernel_like_flash_v3(const __grid_constant__ LikeFlashV3Args) {}
__global__ void empty_kernel_one_word(int) {}

// flash_v3_arguments: the kernel of LikeFlashV3Args, else one of a single int.
void launch_empty_like_flash_v3(int blocks, int threads, size_t smem_bytes, bool flash_v3_arguments) {
  static size_t allowed = 48 * 1024;  // ts_bench runs its entries on one thread, on device 0
  if (smem_bytes > allowed) {
    TS_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&empty_kernel_like_flash_v3),
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
    TS_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&empty_kernel_one_word),
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
    allowed = smem_bytes;
  }
  if (flash_v3_arguments)
    empty_kernel_like_flash_v3<<<blocks, threads, smem_bytes>>>(LikeFlashV3Args{});
  else
    empty_kernel_one_word<<<blocks, threads, smem_bytes>>>(0);
}

}  // namespace ts::bench
