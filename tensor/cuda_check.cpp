// tensor/cuda_check.cpp: turning CUDA and cuBLAS error codes into ts::Error messages.
#include "tensor/cuda_check.h"

#include <cublas_v2.h>  // cublasGetStatusName, cublasGetStatusString

#include <cstdlib>
#include <cstring>
#include <utility>

#include "tensor/error.h"

namespace ts::cuda {

const char* error_hint(cudaError_t err) {
  switch (err) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
      return " Hint: this binary has no code for this GPU's architecture; rebuild with "
             "-DCMAKE_CUDA_ARCHITECTURES=<the GPU's compute capability without the dot: 75 for a T4, 86 for an "
             "A10G or RTX 3090, 89 for an L4, 90 for an H100> (make ... TS_CUDA_ARCHS=86).";
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorCallRequiresNewerDriver:
      return " Hint: no usable NVIDIA GPU or driver; run on the CPU or on a machine with a GPU.";
    case cudaErrorMemoryAllocation:
      return " Hint: free tensors you no longer need, call ts::cuda::empty_cache(), or use smaller sizes.";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
      return " Hint: a kernel touched memory it should not; the CUDA context is now unusable. Rerun with "
             "TS_LAUNCH_BLOCKING=1 (the failing op is then named) or under compute-sanitizer.";
    default:
      return "";
  }
}

namespace detail {

void cuda_fail(cudaError_t err, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  fail("CUDA error {} ({}): {}\n  in {} at {}:{}{}", static_cast<int>(err), cudaGetErrorName(err),
       cudaGetErrorString(err), expr, file, line, error_hint(err));
}

void cublas_fail(int status, const char* expr, const char* file, int line) {
  const auto s = static_cast<cublasStatus_t>(status);
  const char* hint = "";
  if (s == CUBLAS_STATUS_NOT_SUPPORTED)
    hint = " Hint: no cuBLASLt algorithm for this dtype/layout/alignment combination.";
  else if (s == CUBLAS_STATUS_ALLOC_FAILED)
    hint = " Hint: cuBLAS could not allocate device memory (see ts::cuda::memory_stats()).";
  else if (s == CUBLAS_STATUS_ARCH_MISMATCH)
    hint = " Hint: this GPU does not support the requested feature (e.g. bf16 tensor cores need sm_80+).";
  fail("cuBLAS error {} ({}): {}\n  in {} at {}:{}{}", status, cublasGetStatusName(s), cublasGetStatusString(s), expr,
       file, line, hint);
}

}  // namespace detail

bool launch_blocking() {
  static const bool blocking = [] {
    const char* env = std::getenv("TS_LAUNCH_BLOCKING");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return blocking;
}

void refuse_in_capture(const char* what, const char* why) {
  fail("{}: cannot run while a CUDA graph is being captured: {}. Hint: move it before the capture or after it "
       "(ts::cuda::Graph captures the GPU work of a region, to replay it later as one launch)",
       what, why);
}

void clear_launch_error() { detail::launch_error = cudaSuccess; }

void check_launch(const char* variant_name) {
  cudaError_t err = std::exchange(detail::launch_error, cudaSuccess);  // a failed launch (bad config, no kernel image)
  if (err == cudaSuccess && launch_blocking() && !capturing()) {  // a captured launch runs at replay
    err = cudaDeviceSynchronize();       // an asynchronous fault inside the kernel shows here
    if (err == cudaSuccess) err = cudaGetLastError();
  }
  if (err != cudaSuccess) [[unlikely]] {
    (void)cudaGetLastError();
    fail("{}: launch failed: {} ({}){}{}", variant_name, cudaGetErrorString(err), cudaGetErrorName(err),
         launch_blocking() ? "" : " (asynchronous errors may belong to an earlier op: rerun with TS_LAUNCH_BLOCKING=1)",
         error_hint(err));
  }
}

}  // namespace ts::cuda
