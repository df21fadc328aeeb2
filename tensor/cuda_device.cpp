// tensor/cuda_device.cpp: CUDA device discovery through the runtime API.
//
// cudart is linked everywhere; on a machine with no driver its calls return
// an error instead of crashing, and we turn that into a clear ts::Error the
// moment someone asks for a cuda tensor. CPU work never touches this file.
#include "tensor/cuda_device.h"

#include "tensor/cuda_allocator.h"
#include "tensor/cuda_check.h"
#include "tensor/error.h"
#include "tensor/storage.h"

namespace ts {

namespace {

struct Probe {
  int count = 0;
  std::string reason;
  Probe() {
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = fmt::format("{} ({}). Hint: this machine has no usable NVIDIA GPU or driver; run on the CPU "
                           "(--device cpu) or on a machine with a GPU",
                           cudaGetErrorString(err), cudaGetErrorName(err));
      (void)cudaGetLastError();  // clear the sticky-free error so later queries start clean
    } else if (count == 0) {
      reason = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
    }
  }
};

const Probe& probe() {
  static const Probe instance;
  return instance;
}

thread_local int current_device = -1;  // what this thread last made current (-1: unknown)

}  // namespace

int cuda::device_count() { return probe().count; }
bool cuda::is_available() { return probe().count > 0; }
const std::string& cuda::unavailable_reason() { return probe().reason; }

void cuda::init() {
  static const bool installed = [] {
    set_allocator(DeviceType::cuda, &cuda::caching_allocator());
    return true;
  }();
  (void)installed;
}

cuda::DeviceProperties cuda::device_properties(int device) {
  TS_CHECK(device >= 0 && device < device_count(), "device_properties: no CUDA device {} ({} visible){}", device,
           device_count(), is_available() ? "" : ": " + unavailable_reason());
  cudaDeviceProp p{};
  TS_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.multiprocessors = p.multiProcessorCount;
  out.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  out.l2_cache_bytes = p.l2CacheSize;
  out.shared_memory_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  out.max_threads_per_block = p.maxThreadsPerBlock;
  return out;
}

void cuda::set_device(int device) {
  if (device == current_device) return;
  TS_CUDA_CHECK(cudaSetDevice(device));
  current_device = device;
}

void cuda::synchronize() { TS_CUDA_CHECK(cudaDeviceSynchronize()); }

void check_device_available(Device device, const char* op) {
  if (device.is_cpu()) return;
  TS_CHECK(cuda::is_available(), "{}: cannot use {}: {}", op, device.str(), cuda::unavailable_reason());
  TS_CHECK(device.index < cuda::device_count(), "{}: cannot use {}: only {} CUDA device(s) visible", op, device.str(),
           cuda::device_count());
  cuda::init();
}

}  // namespace ts
