// profiler/kernel_footprint.h: a kernel's launch geometry and resources, and the occupancy they allow.
//
// What the trace shows in a kernel's args, computed as Kineto computes it:
//   grid, block, registers per thread, shared memory   as CUPTI reports the launch
//   blocks per SM, warps per SM                         the grid spread over every SM
//   est. achieved occupancy %                           the share of an SM's thread slots the
//                                                       kernel fills: its blocks per SM, capped by
//                                                       how many fit on an SM at once (registers,
//                                                       shared memory and threads each bound that;
//                                                       the CUDA occupancy calculator counts it),
//                                                       times threads per block, over the SM's
//                                                       maximum threads
// Low occupancy is not slowness: a kernel that keeps many registers or much
// shared memory per thread fits few blocks per SM and may still be the fastest.
// As in Kineto, the calculator is asked with the default limit of 48 KiB of
// shared memory per block: a kernel that opted in to more (cuBLAS's GEMMs on
// Hopper use ~200 KiB) fits no block by that count and reads 0%, exactly as
// PyTorch's traces show it.
#pragma once

#include <cuda_runtime_api.h>

#include "profiler/event.h"

namespace ts::profiler {

// A kernel launch as CUPTI's kernel record describes it.
struct KernelLaunch {
  int grid[3] = {0, 0, 0};
  int block[3] = {0, 0, 0};
  int registers_per_thread = 0;
  int static_shared_memory = 0;   // bytes per block, declared in the kernel
  int dynamic_shared_memory = 0;  // bytes per block, asked for at launch
};

// The trace's kernel args for `launch` on `device`. The occupancy is -99 when
// the occupancy calculator rejects the launch's resources; blocks and warps
// per SM stay 0 for an empty block or a device with no SMs.
KernelInfo kernel_footprint(const KernelLaunch& launch, const cudaDeviceProp& device);

}  // namespace ts::profiler
