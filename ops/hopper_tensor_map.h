// ops/hopper_tensor_map.h: the host side of Hopper's kernels: TMA descriptors (ops/cuda_hopper.cuh
// explains the device side). Which GPUs run them is the rungs' sm90a (ops/op.h, gpu_meets).
#pragma once

#include <cuda.h>  // CUtensorMap and its enums: types only, the driver is reached through the runtime

#include <array>
#include <cstdint>
#include <string>

#include "tensor/cuda_device.h"

namespace ts::hopper {

// The properties of CUDA device `index`, read once per process (the SM count sizes grids).
const cuda::DeviceProperties& properties(int index);

// What a tensor map is made of, beyond what every map here shares (16-bit elements, unit element
// strides, no interleave, L2 promotion of 256 bytes, zeros outside the tensor): the base address
// and, per dim from the innermost, the size, the stride in bytes (none for the first, whose stride
// is one element) and the box; and the swizzle, 128 bytes (64 columns a swizzle row) unless set to
// 64 (32 columns). `what` names the op and the operand in the error when the driver refuses the
// map. Two specs that compare equal make the same map.
struct TensorMapSpec {
  const void* base = nullptr;
  const char* what = "";
  int rank = 0;
  std::array<uint64_t, 4> dims{};
  std::array<uint64_t, 3> strides{};
  std::array<uint32_t, 4> box{};
  int swizzle_bytes = 128;
  bool operator==(const TensorMapSpec&) const = default;
};

// The spec of a 16-bit matrix (batch, rows, cols) with unit column stride and element strides
// row_stride and batch_stride, read in boxes of box_rows x box_cols (box_cols * 2 bytes <= 128: one
// swizzle row). A single batch gets any legal stride: it is never stepped.
TensorMapSpec tensor_map_spec_16bit(const void* base, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                                    int64_t batch_stride, int box_rows, int box_cols, const char* what);

// The same for a 4-D tensor (batch, heads, rows, cols) with element strides batch_stride,
// head_stride, row_stride (unit column stride), read in boxes of box_rows x box_cols of one head.
// A dim of size 1 gets any legal stride.
TensorMapSpec tensor_map_spec_16bit_4d(const void* base, int64_t batch, int64_t heads, int64_t rows, int64_t cols,
                                       int64_t batch_stride, int64_t head_stride, int64_t row_stride, int box_rows,
                                       int box_cols, const char* what);

// The map, for a kernel that takes it by value (a `const __grid_constant__ CUtensorMap`
// parameter). Throws ts::Error naming spec.what when the driver refuses it (TMA's rules: the base
// and the strides in bytes multiples of 16, every dim at least 1). Each thread keeps the last maps
// it made, keyed by their spec: asked for the same map again (the same tensors, or new ones of the
// same layout at the same address), it hands back a copy without calling the driver.
CUtensorMap make_tensor_map(const TensorMapSpec& spec);

// This thread's cache misses so far (tests and ts_bench read them): the descriptors the driver
// encoded.
int64_t tensor_map_encodes();

}  // namespace ts::hopper
