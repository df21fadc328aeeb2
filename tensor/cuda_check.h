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
// cuda::check_launch(variant name) (tensor/cuda_device.h) after every CUDA
// variant to report it. This header is the CUDA backend's own: only code that
// calls the CUDA runtime includes it (a CPU-only build has none).
#pragma once

#include <cuda_runtime_api.h>

#include "tensor/cuda_device.h"

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
// check_launch(variant name) and clear_launch_error() (tensor/cuda_device.h) read and forget it.
// check_launch reads what note_launch() kept rather than calling cudaGetLastError, a runtime call
// that costs ~0.2 us per op once CUPTI has been initialised.

// True when TS_LAUNCH_BLOCKING=1 (read once).
bool launch_blocking();

namespace detail {
// The stream of the CUDA graph this thread is capturing (tensor/cuda_graph.h), or null.
inline thread_local cudaStream_t capture_stream = nullptr;
}  // namespace detail

// The stream every op launches on: the legacy default stream (stream 0), as in
// PyTorch without explicit streams, so that copies and kernels run in issue order;
// while this thread captures a CUDA graph, the graph's own stream, whose work is
// recorded rather than run.
inline cudaStream_t current_stream() { return detail::capture_stream; }
inline bool capturing() { return detail::capture_stream != nullptr; }

// Lets this thread make the calls a capture forbids (cudaMalloc) until it goes out of scope; a
// no-op when the thread is not capturing. Only for memory that outlives every graph that uses it.
class RelaxedCapture {
 public:
  RelaxedCapture() {
    if (capturing()) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  ~RelaxedCapture() {
    if (mode_ != cudaStreamCaptureModeRelaxed) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // swapped with the thread's mode
};

// Throws ts::Error "<what>: cannot run while a CUDA graph is being captured: <why>" when this
// thread is capturing (the capture is then abandoned by whoever began it).
void refuse_in_capture(const char* what, const char* why);
inline void check_not_capturing(const char* what, const char* why) {
  if (capturing()) [[unlikely]] refuse_in_capture(what, why);
}

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
