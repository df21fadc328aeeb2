// profiler/cupti_api_selection.h: which CUDA API calls the profiler records, and the names it shows.
//
// A trace that showed every API call would bury the launches under calls that
// every op makes and nobody reads, so the profiler keeps, as Kineto does:
//   runtime calls   all but a blocklist: cudaGetLastError and cudaPeekAtLastError
//                   (asked after launches), device, attribute and pointer queries,
//                   event creation and destruction, stream-capture checks
//   driver calls    only launches, copies and sets (cuLaunch*, cuMemcpy*, cuMemset*):
//                   cuBLAS launches its GEMMs through cuLaunchKernelEx, but makes
//                   many other driver calls per GEMM
// The choice is made twice. At the source: CUPTI is told, per callback id, not
// to record the calls we drop, so they cost no record (switch_off_unkept_api_calls).
// When records are read (keeps_api_call): CUPTI may refuse a per-call switch,
// and then it records everything (as every CUPTI before 12.5 does, having no
// such switch: cupti_versions.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ts::profiler::cupti {

bool blocked_runtime_call(std::string_view name);  // "cudaGetLastError": true
bool kept_driver_call(std::string_view name);      // "cuLaunchKernelEx": true
// Whether a record of this call is kept (the two rules above).
bool keeps_api_call(bool driver, std::string_view name);

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI's name without its version suffix.
std::string without_version_suffix(std::string name);

// The call's name, as the trace shows it ("cudaLaunchKernel"), for a runtime
// or driver callback id. Interned and cached; not thread-safe: only the code
// that reads CUPTI's buffers (under their lock) asks.
std::string_view api_name(bool driver, uint32_t cbid);

// Tells CUPTI not to record, one callback id at a time, the calls we drop.
// Call it after enabling the API activity kinds (enabling a kind again undoes
// it). Returns "" when CUPTI accepted every switch, else the last refusal
// (before CUPTI 12.5: that the switch does not exist).
std::string switch_off_unkept_api_calls();

}  // namespace ts::profiler::cupti
