// profiler/cupti_api_selection.cpp: the runtime blocklist, the driver calls kept, and their names (see the header).
#include "profiler/cupti_api_selection.h"

#include <cupti.h>  // with the callback ids of both APIs (cupti_driver_cbid.h, cupti_runtime_cbid.h)
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>
#include <vector>

#include "profiler/collector.h"
#include "profiler/cuda_call_check.h"
#include "profiler/cupti_versions.h"

namespace ts::profiler::cupti {

namespace {

CUpti_CallbackDomain domain_of(bool driver) { return driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API; }

// CUPTI's name of a callback id, without its version suffix; "cuda api <cbid>" when CUPTI knows none.
std::string callback_name(bool driver, uint32_t cbid) {
  const char* raw = nullptr;
  if (cuptiGetCallbackName(domain_of(driver), cbid, &raw) != CUPTI_SUCCESS || raw == nullptr)
    return fmt::format("cuda api {}", cbid);  // ids with no name exist (retired calls): not a failure
  return without_version_suffix(raw);
}

}  // namespace

bool blocked_runtime_call(std::string_view name) {
  static constexpr std::string_view kBlocked[] = {
      "cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaEventCreate",
      "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaGetDeviceCount", "cudaStreamIsCapturing",
      "cudaDeviceGetAttribute", "cudaGetDeviceProperties", "cudaFuncGetAttributes", "cudaPointerGetAttributes",
      "cudaGetFuncBySymbol", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"};
  return std::find(std::begin(kBlocked), std::end(kBlocked), name) != std::end(kBlocked);
}

bool kept_driver_call(std::string_view name) {
  return name.starts_with("cuLaunch") || name.starts_with("cuMemcpy") || name.starts_with("cuMemset");
}

bool keeps_api_call(bool driver, std::string_view name) {
  return driver ? kept_driver_call(name) : !blocked_runtime_call(name);
}

std::string without_version_suffix(std::string name) {
  if (const size_t v = name.find("_v"); v != std::string::npos && v + 2 < name.size() &&
                                        std::isdigit(static_cast<unsigned char>(name[v + 2])))
    name.resize(v);
  return name;
}

std::string_view api_name(bool driver, uint32_t cbid) {
  static std::map<std::pair<bool, uint32_t>, std::string_view> names;
  const auto key = std::make_pair(driver, cbid);
  if (const auto it = names.find(key); it != names.end()) return it->second;
  return names[key] = detail::intern(callback_name(driver, cbid));
}

#if TS_CUPTI_HAS_PER_CALL_API_SWITCH

namespace {

// Callback ids of the calls we drop, in both APIs. Computed once.
struct DroppedCalls {
  std::vector<uint32_t> runtime, driver;
};
const DroppedCalls& dropped_calls() {
  static const DroppedCalls dropped = [] {
    DroppedCalls d;
    for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
      if (!keeps_api_call(false, callback_name(false, cbid))) d.runtime.push_back(cbid);
    for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
      if (!keeps_api_call(true, callback_name(true, cbid))) d.driver.push_back(cbid);
    return d;
  }();
  return dropped;
}

}  // namespace

std::string switch_off_unkept_api_calls() {
  std::string refused;
  const DroppedCalls& dropped = dropped_calls();
  for (uint32_t cbid : dropped.runtime)
    if (std::string e = TS_CUPTI_TRY(cuptiActivityEnableRuntimeApi(cbid, 0)); !e.empty()) refused = std::move(e);
  for (uint32_t cbid : dropped.driver)
    if (std::string e = TS_CUPTI_TRY(cuptiActivityEnableDriverApi(cbid, 0)); !e.empty()) refused = std::move(e);
  return refused;
}

#else

// No per-call switch before CUPTI 12.5 (cupti_versions.h): the caller's warning says what that costs.
std::string switch_off_unkept_api_calls() {
  return fmt::format("this build's CUPTI (API version {}) cannot switch off single API calls (CUPTI 12.5 can)",
                     CUPTI_API_VERSION);
}

#endif

}  // namespace ts::profiler::cupti
