// profiler/cuda_call_check.h: how the profiler checks its own CUDA and CUPTI calls.
//
// The profiler's CUDA side runs where an exception must not escape: in CUPTI's
// buffer callbacks, in the hooks every op calls on entry and exit, inside the
// steps of the Profiler's state machine (a throw would leave a session half
// started or half stopped), and at process exit. So its calls are checked
// without throwing:
//
//   TS_PROFILER_CUDA_OK(cudaDeviceSynchronize());         // the CUDA runtime
//   if (!TS_CUPTI_OK(cuptiActivityFlushAll(0))) return;   // CUPTI
//
// Each macro returns true on success. A failure is noted (the expression, its
// file and line, the library's error name and text), printed once on stderr,
// and reported with the next recording: DeviceActivityInfo::failed_calls and
// first_failed_call, which the table's footer and the trace's "cuda_activity"
// metadata show. Calls whose failure changes what the profiler does (CUPTI
// cannot start, so GPU time comes from CUDA events) read the error text with
// cupti_error() and act on it instead.
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <string>

#include "profiler/event.h"

namespace ts::profiler::detail {

// "<expr> failed: CUPTI_ERROR_... (<code>)", or "" when `result` is CUPTI_SUCCESS.
std::string cupti_error(CUptiResult result, const char* expr);

void note_failed_cuda_call(cudaError_t error, const char* expr, const char* file, int line);
void note_failed_cupti_call(CUptiResult result, const char* expr, const char* file, int line);

inline bool cuda_call_ok(cudaError_t error, const char* expr, const char* file, int line) {
  if (error == cudaSuccess) [[likely]] return true;
  note_failed_cuda_call(error, expr, file, line);
  return false;
}
inline bool cupti_call_ok(CUptiResult result, const char* expr, const char* file, int line) {
  if (result == CUPTI_SUCCESS) [[likely]] return true;
  note_failed_cupti_call(result, expr, file, line);
  return false;
}

// Moves the failures noted since the last call into `info` (failed_calls, first_failed_call).
void report_failed_calls(DeviceActivityInfo& info);
// The failures noted since the last report, as one line ("" when none): for process exit, where no recording follows.
std::string unreported_failed_calls();

}  // namespace ts::profiler::detail

#define TS_PROFILER_CUDA_OK(expr) ::ts::profiler::detail::cuda_call_ok((expr), #expr, __FILE__, __LINE__)
#define TS_CUPTI_OK(expr) ::ts::profiler::detail::cupti_call_ok((expr), #expr, __FILE__, __LINE__)
// For calls whose failure changes course: "" on success, else the error text.
#define TS_CUPTI_TRY(expr) ::ts::profiler::detail::cupti_error((expr), #expr)
