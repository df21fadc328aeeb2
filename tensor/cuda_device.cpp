// tensor/cuda_device.cpp: CUDA device discovery through the runtime API.
//
// cudart is linked everywhere; on a machine with no driver its calls return
// an error instead of crashing, and we turn that into a clear ts::Error the
// moment someone asks for a cuda tensor. CPU work never touches this file.
#include "tensor/cuda_device.h"

#include <cuda_runtime_api.h>

#include "tensor/error.h"

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

}  // namespace

int cuda::device_count() { return probe().count; }
bool cuda::is_available() { return probe().count > 0; }
const std::string& cuda::unavailable_reason() { return probe().reason; }

void check_device_available(Device device, const char* op) {
  if (device.is_cpu()) return;
  TS_CHECK(cuda::is_available(), "{}: cannot use {}: {}", op, device.str(), cuda::unavailable_reason());
  TS_CHECK(device.index < cuda::device_count(), "{}: cannot use {}: only {} CUDA device(s) visible", op, device.str(),
           cuda::device_count());
}

}  // namespace ts
