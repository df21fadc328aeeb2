// tensor/cuda_check.h: every CUDA, cuBLAS and cuBLASLt call goes through one of these macros.
//
//   TS_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream));
//   TS_CUBLAS_CHECK(cublasLtMatmul(...));
//
// On failure they throw ts::Error with the failing expression, its file and
// line, the library's error name and text, and a hint for the errors newcomers
// hit (no driver, a binary built for another GPU architecture, out of memory).
// Kernels launch through ts::launch (ops/cuda_common.cuh), which keeps the
// launch's own error with note_launch(); the dispatcher then calls
// cuda::check_launch(variant name) after every CUDA variant to report it.
#pragma once

#include <cuda_runtime_api.h>

namespace ts::cuda {

namespace detail {
[[noreturn]] void cuda_fail(cudaError_t err, const char* expr, const char* file, int line);
// cublasStatus_t travels as int so this header needs no cuBLAS include.
[[noreturn]] void cublas_fail(int status, const char* expr, const char* file, int line);
}  // namespace detail

// The hint for a CUDA error code ("" when there is none worth giving).
const char* error_hint(cudaError_t err);

namespace detail {
inline thread_local cudaError_t launch_error = cudaSuccess;  // the first failed launch since the last check
}  // namespace detail

// Keeps a launch's error for check_launch (the first one, when several launches fail).
inline void note_launch(cudaError_t err) {
  if (err != cudaSuccess && detail::launch_error == cudaSuccess) [[unlikely]] detail::launch_error = err;
}
// Forgets a kept error: dispatch() calls it when a CUDA variant throws, so that
// the next op's check does not report a launch of the op that threw.
inline void clear_launch_error() { detail::launch_error = cudaSuccess; }

// After a variant's kernels were launched: throws ts::Error "<variant>: launch
// failed: ..." when a launch failed. It reads what note_launch() kept rather
// than calling cudaGetLastError, a runtime call that costs ~0.2 us per op once
// CUPTI has been initialised. With TS_LAUNCH_BLOCKING=1 it also waits for the
// device, so an asynchronous fault (an illegal address) names the op that
// caused it instead of a later one.
void check_launch(const char* variant_name);

// True when TS_LAUNCH_BLOCKING=1 (read once).
bool launch_blocking();

}  // namespace ts::cuda

#define TS_CUDA_CHECK(expr)                                                                   \
  do {                                                                                        \
    const cudaError_t ts_cuda_err_ = (expr);                                                  \
    if (ts_cuda_err_ != cudaSuccess) [[unlikely]]                                             \
      ::ts::cuda::detail::cuda_fail(ts_cuda_err_, #expr, __FILE__, __LINE__);                 \
  } while (0)

// For cublas* and cublasLt* calls (both return cublasStatus_t).
#define TS_CUBLAS_CHECK(expr)                                                                 \
  do {                                                                                        \
    const auto ts_cublas_status_ = (expr);                                                    \
    if (ts_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                              \
      ::ts::cuda::detail::cublas_fail(static_cast<int>(ts_cublas_status_), #expr, __FILE__, __LINE__); \
  } while (0)
