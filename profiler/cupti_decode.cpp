// profiler/cupti_decode.cpp: CUPTI's record structs read into kept records, one reader per kind (see the header).
#include "profiler/cupti_decode.h"

#include <cxxabi.h>
#include <fmt/core.h>

#include <cstdlib>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "profiler/collector.h"
#include "profiler/cupti_api_selection.h"
#include "profiler/cupti_versions.h"

namespace ts::profiler::cupti {

namespace {

// ---- names ----------------------------------------------------------------------

// The kernel's name demangled, and as the binary has it; cached per CUPTI name
// pointer (CUPTI hands the same pointer for every launch of a kernel).
std::pair<std::string_view, std::string_view> kernel_names(const char* raw) {
  static std::unordered_map<const char*, std::pair<std::string_view, std::string_view>> names;
  if (const auto it = names.find(raw); it != names.end()) return it->second;
  const std::string_view mangled = detail::intern(raw != nullptr ? raw : "?");
  int status = 0;
  char* demangled = raw != nullptr ? abi::__cxa_demangle(raw, nullptr, nullptr, &status) : nullptr;
  const std::string_view name = status == 0 && demangled != nullptr ? detail::intern(demangled) : mangled;
  std::free(demangled);
  return names[raw] = {name, mangled};
}

const char* copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

const char* memory_kind(uint16_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
  }
}

const char* sync_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Unknown Sync";
  }
}

const char* overhead_name(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "Resource";
#if TS_CUPTI_HAS_MODULE_LOADING_OVERHEAD
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Runtime Triggered Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
#endif
#if TS_CUPTI_HAS_COMMAND_BUFFER_FULL_OVERHEAD
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
#endif
#if TS_CUPTI_HAS_BUFFER_REQUEST_OVERHEAD
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
#endif
    default: return "Unknown Overhead";
  }
}

// ---- one reader per record kind ---------------------------------------------------

void keep_kernel(const KernelActivity& k, KeptRecords& kept) {
  const auto [name, mangled] = kernel_names(k.name);
  kept.gpu.push_back({.kind = EventKind::kernel,
                      .start = static_cast<int64_t>(k.start),
                      .end = static_cast<int64_t>(k.end),
                      .device = k.deviceId,
                      .context = k.contextId,
                      .stream = k.streamId,
                      .correlation = k.correlationId,
                      .name = name,
                      .mangled = mangled,
                      .launch = {.grid = {k.gridX, k.gridY, k.gridZ},
                                 .block = {k.blockX, k.blockY, k.blockZ},
                                 .registers_per_thread = k.registersPerThread,
                                 .static_shared_memory = k.staticSharedMemory,
                                 .dynamic_shared_memory = k.dynamicSharedMemory}});
}

void keep_memcpy(const MemcpyActivity& m, KeptRecords& kept) {
  const std::string_view name = detail::intern(
      fmt::format("Memcpy {} ({} -> {})", copy_kind(m.copyKind), memory_kind(m.srcKind), memory_kind(m.dstKind)));
  kept.gpu.push_back({.kind = EventKind::memcpy,
                      .start = static_cast<int64_t>(m.start),
                      .end = static_cast<int64_t>(m.end),
                      .device = m.deviceId,
                      .context = m.contextId,
                      .stream = m.streamId,
                      .correlation = m.correlationId,
                      .bytes = static_cast<int64_t>(m.bytes),
                      .name = name});
}

void keep_memset(const CUpti_ActivityMemset4& m, KeptRecords& kept) {
  const std::string_view name = detail::intern(fmt::format("Memset ({})", memory_kind(m.memoryKind)));
  kept.gpu.push_back({.kind = EventKind::memset,
                      .start = static_cast<int64_t>(m.start),
                      .end = static_cast<int64_t>(m.end),
                      .device = m.deviceId,
                      .context = m.contextId,
                      .stream = m.streamId,
                      .correlation = m.correlationId,
                      .bytes = static_cast<int64_t>(m.bytes),
                      .name = name});
}

// CUPTI names only the sync's context: the conversion finds its device.
void keep_sync(const SyncActivity& s, KeptRecords& kept) {
  kept.gpu.push_back({.kind = EventKind::cuda_sync,
                      .start = static_cast<int64_t>(s.start),
                      .end = static_cast<int64_t>(s.end),
                      .context = s.contextId,
                      .stream = s.streamId,
                      .correlation = s.correlationId,
                      .name = sync_name(s.type),
                      .cuda_event_id = s.cudaEventId});
}

void keep_api_call(const CUpti_ActivityAPI& a, bool driver, KeptRecords& kept) {
  const std::string_view name = api_name(driver, a.cbid);
  if (!keeps_api_call(driver, name)) return;  // CUPTI refused to switch it off at the source
  kept.api.push_back({.start = static_cast<int64_t>(a.start),
                      .end = static_cast<int64_t>(a.end),
                      .correlation = a.correlationId,
                      .cbid = a.cbid,
                      .tid = static_cast<int64_t>(a.threadId),
                      .name = name,
                      .driver = driver});
}

// Ops push their External id as CUSTOM0, user scopes as CUSTOM1 (collector.h's CorrelationKind).
void keep_correlation(const CUpti_ActivityExternalCorrelation& x, KeptRecords& kept) {
  if (x.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) kept.op_of[x.correlationId] = x.externalId;
  if (x.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) kept.annotation_of[x.correlationId] = x.externalId;
}

void keep_overhead(const OverheadActivity& o, KeptRecords& kept) {
  kept.overhead.push_back(
      {.start = static_cast<int64_t>(o.start), .end = static_cast<int64_t>(o.end), .name = overhead_name(o.overheadKind)});
}

// CUPTI's records share a header (`kind`); the full struct is the one for that kind and version (cupti_versions.h).
template <typename Record>
const Record& as(const CUpti_Activity& record) {
  return *reinterpret_cast<const Record*>(&record);
}

}  // namespace

void keep_record(const CUpti_Activity& record, KeptRecords& kept) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return keep_kernel(as<KernelActivity>(record), kept);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return keep_memcpy(as<MemcpyActivity>(record), kept);
    case CUPTI_ACTIVITY_KIND_MEMSET: return keep_memset(as<CUpti_ActivityMemset4>(record), kept);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return keep_sync(as<SyncActivity>(record), kept);
    case CUPTI_ACTIVITY_KIND_RUNTIME: return keep_api_call(as<CUpti_ActivityAPI>(record), false, kept);
    case CUPTI_ACTIVITY_KIND_DRIVER: return keep_api_call(as<CUpti_ActivityAPI>(record), true, kept);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return keep_correlation(as<CUpti_ActivityExternalCorrelation>(record), kept);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return keep_overhead(as<OverheadActivity>(record), kept);
    default: return;
  }
}

}  // namespace ts::profiler::cupti
