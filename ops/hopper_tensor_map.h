// ops/hopper_tensor_map.h: the host side of TMA (ops/cuda_hopper.cuh explains the device side).
#pragma once

#include <cuda.h>  // CUtensorMap and its enums: types only, the driver is reached through the runtime

#include <cstdint>

namespace ts::hopper {

// The tensor map of a 16-bit matrix (batch, rows, cols) with unit column stride and element
// strides row_stride and batch_stride, read in boxes of box_rows x box_cols with the 128-byte
// swizzle (box_cols * 2 bytes <= 128: one swizzle row); what lies outside the matrix reads as
// zeros. Throws ts::Error naming `what` when the driver refuses it (TMA's rules: the base and
// the strides in bytes multiples of 16, every dim at least 1).
CUtensorMap make_tensor_map_16bit(const void* base, int64_t batch, int64_t rows, int64_t cols, int64_t row_stride,
                                  int64_t batch_stride, int box_rows, int box_cols, const char* what);

}  // namespace ts::hopper
