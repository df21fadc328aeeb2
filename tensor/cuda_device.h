// tensor/cuda_device.h: is there a GPU, how many, what are they; the stream we launch on.
// Safe on machines without a driver: nothing here touches CUDA until asked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "tensor/device.h"

namespace ts {

namespace cuda {
// Number of visible CUDA devices; 0 when there is no GPU or no driver.
int device_count();
bool is_available();
// Why CUDA is unavailable (the CUDA runtime's error and a hint), or "" when it is available.
const std::string& unavailable_reason();

// Readies the CUDA backend the first time a cuda device is used: installs the
// caching allocator (tensor/cuda_allocator.h) for DeviceType::cuda. Cheap after
// the first call. check_device_available() calls it.
void init();

struct DeviceProperties {
  std::string name;              // "NVIDIA H200"
  int major = 0, minor = 0;      // compute capability: 9.0 on Hopper
  int multiprocessors = 0;       // SMs (132 on an H200)
  int64_t total_memory = 0;      // bytes of device memory
  int64_t l2_cache_bytes = 0;
  int64_t shared_memory_per_block_optin = 0;  // the most a block may ask for after cudaFuncSetAttribute
  int max_threads_per_block = 0;
};
DeviceProperties device_properties(int device = 0);

// Makes `device` current for this thread (a thread-local compare when it already is).
void set_device(int device);

// The stream every op launches on: the legacy default stream (stream 0), as in
// PyTorch without explicit streams. Copies and kernels on it run in issue order.
inline cudaStream_t current_stream() { return nullptr; }

// Waits until all work queued on the current device has finished; throws on an asynchronous error.
void synchronize();
}  // namespace cuda

// Throws ts::Error naming `op` when `device` is a CUDA device this process cannot use.
// The first time a usable CUDA device is asked for, initialises the CUDA backend.
void check_device_available(Device device, const char* op);

}  // namespace ts
