// tensor/cuda_device.h: is there a GPU, and how many. Safe on machines without a driver.
#pragma once

#include <string>

#include "tensor/device.h"

namespace ts {

namespace cuda {
// Number of visible CUDA devices; 0 when there is no GPU or no driver.
int device_count();
bool is_available();
// Why CUDA is unavailable (the CUDA runtime's error and a hint), or "" when it is available.
const std::string& unavailable_reason();
}  // namespace cuda

// Throws ts::Error naming `op` when `device` is a CUDA device this process cannot use.
void check_device_available(Device device, const char* op);

}  // namespace ts
