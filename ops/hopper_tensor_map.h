// ops/hopper_tensor_map.h: the host side of Hopper's kernels: TMA descriptors (ops/cuda_hopper.cuh
// explains the device side). Which GPUs run them is the rungs' sm90a (ops/op.h, gpu_meets).
#pragma once

#include <cuda.h>  // CUtensorMap and its enums: types only, the driver is reached through the runtime

#include <cstdint>
#include <string>

#include "tensor/cuda_device.h"

namespace ts::hopper {

// The properties of CUDA device `index`, read once per process (the SM count sizes grids).
const cuda::DeviceProperties& properties(int index);

// The tensor map of a 16-bit matrix (batch, rows, cols) with unit column stride and element
// strides row_stride and batch_stride, read in boxes of box_rows x box_cols with the 128-byte
// swizzle (box_cols * 2 bytes <= 128: one swizzle row); what lies outside the matrix reads as
// zeros. Throws ts::Error naming `what` when the driver refuses it (TMA's rules: the base and
// the strides in bytes multiples of 16, every dim at least 1). Both makers keep the last maps
// each thread made, keyed by every argument of the driver's encode: asked for the same map
// again (the same tensors, or new ones of the same layout at the same address), they hand back
// a copy without calling the driver.
CUtensorMap make_tensor_map_16bit(const void* base, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                                  int64_t batch_stride, int box_rows, int box_cols, const char* what);

// The same for a 4-D tensor (batch, heads, rows, cols) with element strides batch_stride,
// head_stride, row_stride (unit column stride), read in boxes of box_rows x box_cols of one head.
// A dim of size 1 gets any legal stride: it is never stepped.
CUtensorMap make_tensor_map_16bit_4d(const void* base, int64_t batch, int64_t heads, int64_t rows, int64_t cols,
                                     int64_t batch_stride, int64_t head_stride, int64_t row_stride, int box_rows,
                                     int box_cols, const char* what);

// How many descriptors this thread had the driver encode so far: the makers' cache misses (tests
// and ts_bench read it).
int64_t tensor_map_encodes();

}  // namespace ts::hopper
