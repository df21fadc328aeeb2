// profiler/cupti_records.h: what the profiler keeps of CUPTI's activity records, and how it turns them into Events.
//
// CUPTI hands back its activity buffers on one of its own threads
// (cupti_buffers.h); the fields we use are copied out of each record into
// the plain structs below (cupti_decode.h), with names interned and times
// as CUPTI reported them. When the profile stops, append_cupti_events()
// turns them into Events (event.h) in named steps:
//   1. times onto the profiler's clock
//   2. API calls in the window become cuda_runtime / cuda_driver events; each
//      gets the op that made it as its parent when that op encloses it on
//      the same thread (one call per correlation: a runtime call wins over
//      the driver call it made)
//   3. GPU work becomes kernel / memcpy / memset / cuda_sync events, charged to
//      the op that launched it (its External id), kernels with their footprint
//      (kernel_footprint.h); work launched before the window (the schedule's
//      wait and warmup steps) is dropped, work with no launch call is counted
//   4. each user scope's span of GPU work on each stream (gpu_user_annotation)
//   5. CUPTI's overhead, then the devices for the trace's deviceProperties
// Nothing here calls CUDA or CUPTI, so tests feed it records made by hand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiler/event.h"
#include "profiler/kernel_footprint.h"

namespace ts::profiler::cupti {

// A runtime or driver call, made on a CPU thread.
struct ApiRecord {
  int64_t start = 0, end = 0;
  uint32_t correlation = 0;  // shared with the GPU work the call made
  uint32_t cbid = 0;         // CUPTI's callback id (211: cudaLaunchKernel)
  int64_t tid = 0;           // the OS thread id
  std::string_view name{};   // "cudaLaunchKernel", "cuLaunchKernelEx"
  bool driver = false;
};

// Work on the GPU (kernel, memcpy, memset) or a wait for it (cuda_sync).
struct GpuRecord {
  EventKind kind = EventKind::kernel;
  int64_t start = 0, end = 0;
  uint32_t device = 0;   // a sync's device is unknown until conversion: CUPTI names only its context
  uint32_t context = 0;
  uint32_t stream = 0;   // a device-wide sync has CUPTI's "none", which reads as -1 once signed
  uint32_t correlation = 0;
  int64_t bytes = 0;     // memcpy, memset
  std::string_view name{};
  std::string_view mangled{};  // kernel: the name as the binary has it (`name` is demangled)
  KernelLaunch launch{};       // kernel
  uint32_t cuda_event_id = 0;  // sync on an event: the event waited on
};

// CUPTI's own work: buffer flushes, instrumentation, lazy loading.
struct OverheadRecord {
  int64_t start = 0, end = 0;
  std::string_view name{};
};

// Everything kept from one window's buffers.
struct KeptRecords {
  std::vector<ApiRecord> api;
  std::vector<GpuRecord> gpu;
  std::vector<OverheadRecord> overhead;
  // correlation -> External id of the innermost op (op_of) or user scope (annotation_of)
  // open when the call was made, from CUPTI's external correlation records.
  std::unordered_map<uint32_t, uint64_t> op_of, annotation_of;
};

// What the conversion needs to know besides the records.
struct ConversionContext {
  int64_t clock_offset_ns = 0;              // added to CUPTI times (0: CUPTI reads the profiler's clock)
  std::span<const cudaDeviceProp> devices{};  // by device index: footprints and deviceProperties
  int current_device = 0;                   // the device of a sync whose context ran no recorded GPU work
};

// Appends the records' events to `rec` (its CPU events and capture window are
// already there) and counts unmatched_records and launch_order_violations in
// rec.device_activity. `kept` is consumed (sorted, times shifted). The caller
// sorts the events afterwards (detail::sort_events).
void append_cupti_events(KeptRecords& kept, const ConversionContext& context, Recording& rec);

}  // namespace ts::profiler::cupti
