// profiler/kernel_footprint.cpp: occupancy from a kernel's launch and its device (see kernel_footprint.h).
#include "profiler/kernel_footprint.h"

#include <cuda_occupancy.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace ts::profiler {

namespace {

// The most blocks of this launch that one SM can hold at once, or -1 when the
// calculator rejects the launch's resources. Header-only: no GPU is asked.
int max_resident_blocks(const KernelLaunch& launch, const cudaDeviceProp& device, int block_size) {
  cudaOccFuncAttributes attributes;
  attributes.maxThreadsPerBlock = INT_MAX;  // the launch happened: its block size was accepted
  attributes.numRegs = launch.registers_per_thread;
  attributes.sharedSizeBytes = static_cast<size_t>(launch.static_shared_memory);
  attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
  attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
  attributes.maxDynamicSharedSizeBytes = 0;
  const cudaOccDeviceState state{};
  const cudaOccDeviceProp occupancy_device(device);
  cudaOccResult result{};
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &occupancy_device, &attributes, &state, block_size,
                                              static_cast<size_t>(launch.dynamic_shared_memory)) != CUDA_OCC_SUCCESS)
    return -1;
  return result.activeBlocksPerMultiprocessor;
}

}  // namespace

KernelInfo kernel_footprint(const KernelLaunch& launch, const cudaDeviceProp& device) {
  KernelInfo k{.registers_per_thread = launch.registers_per_thread,
               .shared_memory = int64_t{launch.static_shared_memory} + launch.dynamic_shared_memory};
  std::copy(std::begin(launch.grid), std::end(launch.grid), k.grid);
  std::copy(std::begin(launch.block), std::end(launch.block), k.block);
  const int block_size = launch.block[0] * launch.block[1] * launch.block[2];
  if (device.multiProcessorCount <= 0 || block_size <= 0) return k;

  const double blocks = 1.0 * launch.grid[0] * launch.grid[1] * launch.grid[2];
  const double blocks_per_sm = blocks / device.multiProcessorCount;
  k.blocks_per_sm = blocks_per_sm;
  k.warps_per_sm = blocks_per_sm * block_size / device.warpSize;

  const int resident = max_resident_blocks(launch, device, block_size);
  if (resident < 0) {
    k.occupancy_percent = -99;
    return k;
  }
  const double active_blocks_per_sm = std::min(blocks_per_sm, static_cast<double>(resident));
  k.occupancy_percent =
      static_cast<int>(std::lround(100.0 * active_blocks_per_sm * block_size / device.maxThreadsPerMultiProcessor));
  return k;
}

}  // namespace ts::profiler
