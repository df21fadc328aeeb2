// profiler/cuda_call_check.cpp: the log of the profiler's failed CUDA and CUPTI calls (see cuda_call_check.h).
#include "profiler/cuda_call_check.h"

#include <fmt/core.h>

#include <mutex>
#include <string_view>

namespace ts::profiler::detail {

namespace {

struct FailedCalls {
  std::mutex mutex;
  int64_t count = 0;  // since the last report
  std::string first;  // the first of those
};
FailedCalls& failed_calls() {
  static FailedCalls* f = new FailedCalls;  // leaked on purpose: CUPTI's threads may still fail while the process exits
  return *f;
}

// "profiler/cupti_source.cpp" rather than the build machine's absolute path.
std::string_view source_file(std::string_view file) {
  const size_t at = file.rfind("profiler/");
  return at == std::string_view::npos ? file : file.substr(at);
}

void note(std::string message) {
  FailedCalls& f = failed_calls();
  std::lock_guard lock(f.mutex);
  if (f.count++ == 0) {
    fmt::print(stderr, "warning: profiler: {} (the recording's CUDA activity reports it)\n", message);
    f.first = std::move(message);
  }
}

}  // namespace

std::string cupti_error(CUptiResult result, const char* expr) {
  if (result == CUPTI_SUCCESS) return "";
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  return fmt::format("{} failed: {} ({})", expr, text, static_cast<int>(result));
}

void note_failed_cuda_call(cudaError_t error, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so that the next call starts clean
  note(fmt::format("{} failed: {}: {} ({}:{})", expr, cudaGetErrorName(error), cudaGetErrorString(error),
                   source_file(file), line));
}

void note_failed_cupti_call(CUptiResult result, const char* expr, const char* file, int line) {
  note(fmt::format("{} ({}:{})", cupti_error(result, expr), source_file(file), line));
}

void report_failed_calls(DeviceActivityInfo& info) {
  FailedCalls& f = failed_calls();
  std::lock_guard lock(f.mutex);
  info.failed_calls += f.count;
  if (info.first_failed_call.empty()) info.first_failed_call = std::move(f.first);
  f.count = 0;
  f.first.clear();
}

std::string unreported_failed_calls() {
  DeviceActivityInfo info;
  report_failed_calls(info);
  if (info.failed_calls == 0) return "";
  return fmt::format("{} failed CUDA/CUPTI calls, the first: {}", info.failed_calls, info.first_failed_call);
}

}  // namespace ts::profiler::detail
