// tensor/cuda_device.h: is there a GPU, how many, what are they, which of this build's code they run.
// Safe on machines without a driver: nothing here touches CUDA until asked. Every build has this
// API; a build configured without the CUDA toolkit answers it from tensor/cuda_device_absent.cpp
// (no device, and a reason that says so).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/device.h"

namespace ts {

namespace cuda {
// Number of visible CUDA devices; 0 when there is no GPU, no driver or no CUDA backend in this build.
int device_count();
bool is_available();
// Why CUDA is unavailable (the CUDA runtime's error and a hint), or "" when it is available.
const std::string& unavailable_reason();
// False in a build configured without the CUDA toolkit (CPU only).
bool built_with_cuda();

// A GPU generation as CUDA numbers it: 7.5 Turing (T4, RTX 20), 8.0 A100, 8.6 A10G and RTX 30,
// 8.9 L4 and RTX 40, 9.0 H100 and H200, 10.0 B200, 12.0 RTX 50.
struct ComputeCapability {
  int major = 0, minor = 0;
  constexpr auto operator<=>(const ComputeCapability&) const = default;
};
std::string to_string(ComputeCapability c);  // "8.0"

// How the rungs see device `index` (read once per device, on its first use):
//   gpu         the GPU's own compute capability;
//   chosen_as   what rungs are chosen for: gpu, or the lower capability TS_DEVICE_CAPABILITY names
//               (TS_DEVICE_CAPABILITY=7.5 on an H200 chooses every rung as a T4 would; the code
//               that runs is still the H200's);
//   code        the virtual architecture this build's kernels were compiled from, for this device:
//               sm_90 machine code is 9.0; compute_80 PTX, compiled by the driver at load, is 8.0.
//               A kernel built from compute_80 has no instruction newer than 8.0's.
struct DeviceTarget {
  std::string name;  // "NVIDIA H200"
  ComputeCapability gpu, chosen_as, code;
  bool emulated() const { return chosen_as != gpu; }
};
// Throws ts::Error (as check_device_available does) when the device cannot be used.
const DeviceTarget& target(int index);

// The CUDA architectures this build carries code for, as CMake was given them
// ("75-real;80-real;...;120"), and whether it has the sm_90a kernels (wgmma, setmaxnreg, TMA).
const char* built_architectures();
bool built_sm90a();

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

// Waits until all work queued on the current device has finished; throws on an asynchronous error.
void synchronize();
// Waits until the work queued on the stream ops launch on has finished (cudaStreamSynchronize).
void synchronize_stream();

// Copies `bytes` from device memory at `src` (on `device`) to host memory at `dst`, and waits.
void copy_to_host(void* dst, const void* src, size_t bytes, int device);

// After a variant's kernels were launched: throws ts::Error "<variant>: launch
// failed: ..." when a launch failed (tensor/cuda_check.h says how launches are
// kept). With TS_LAUNCH_BLOCKING=1 it also waits for the device, so an
// asynchronous fault (an illegal address) names the op that caused it.
void check_launch(const char* variant_name);
// Forgets a kept launch error: dispatch() calls it when a CUDA variant throws, so
// that the next op's check does not report a launch of the op that threw.
void clear_launch_error();
}  // namespace cuda

// Throws ts::Error naming `op` when `device` is a CUDA device this process cannot use:
// no GPU or driver, a GPU older than compute capability 7.5, a GPU this build carries no
// code for (the message names the GPU, the build's architectures and the command that
// rebuilds for it), or a TS_DEVICE_CAPABILITY it cannot honour. The first time a usable
// CUDA device is asked for, initialises the CUDA backend.
void check_device_available(Device device, const char* op);

}  // namespace ts
