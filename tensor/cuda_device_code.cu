// tensor/cuda_device_code.cu: an empty kernel built like every kernel of the library (the same
// CUDA_ARCHITECTURES), so that asking the runtime about it tells which of this build's images a
// device runs: sm_90 machine code, compute_80 PTX compiled by the driver at load, or none.
// tensor/cuda_device.cpp asks once per device, before anything else runs there.
#include <cuda_runtime_api.h>

namespace ts::cuda::detail {

namespace {
__global__ void ts_device_code_probe() {}
}  // namespace

cudaError_t device_code_attributes(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, ts_device_code_probe);
}

}  // namespace ts::cuda::detail
