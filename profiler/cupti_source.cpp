// profiler/cupti_source.cpp: CUPTI activity records -> Events (see cupti_source.h for the life cycle).
//
// CUPTI writes records into buffers we lend it (a bounded pool of 4 MiB
// buffers) and hands each one back, full or flushed, on one of its own
// threads. That callback copies what we keep into small structs (names
// interned) and returns the buffer to the pool; stop() turns the structs into
// Events on the profiler's clock, which CUPTI reads through our timestamp
// callback, so CPU and GPU events need no conversion.
#include "profiler/cupti_source.h"

#include <cuda_occupancy.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cxxabi.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/cuda_event_fallback.h"
#include "tensor/cuda_device.h"

namespace ts::profiler {

namespace {

// A CUPTI call that must succeed; on failure, returns its error text (else "").
std::string cupti_error(CUptiResult result, const char* expr) {
  if (result == CUPTI_SUCCESS) return "";
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return fmt::format("{} failed: {} ({})", expr, text != nullptr ? text : "unknown error", static_cast<int>(result));
}
#define TS_CUPTI_TRY(expr) cupti_error((expr), #expr)

// ---- the buffer pool -------------------------------------------------------------------

constexpr size_t kBufferBytes = size_t{4} << 20;  // CUPTI recommends 1-10 MB
constexpr size_t kMaxBuffers = 32;                // 128 MiB at most, as Kineto

struct Pool {
  std::mutex mutex;
  std::vector<uint8_t*> free;
  size_t allocated = 0;
  int64_t refused = 0;  // requests past kMaxBuffers: CUPTI drops those records
};
Pool& pool() {
  static Pool* p = new Pool;  // leaked on purpose: CUPTI may call back while the process exits
  return *p;
}

// ---- what the buffer callback keeps -------------------------------------------------------

struct ApiRecord {
  int64_t start, end;
  uint32_t correlation, cbid;
  int64_t tid;
  std::string_view name;
  bool driver;
};
struct GpuRecord {
  EventKind kind;
  int64_t start, end;
  uint32_t device, context, stream, correlation;
  int64_t bytes;
  std::string_view name, mangled;
  int grid[3], block[3];
  int registers, static_smem, dynamic_smem;
  uint32_t cuda_event_id;  // a sync on an event
};
struct OverheadRecord {
  int64_t start, end;
  std::string_view name;
};

struct Records {
  std::mutex mutex;
  std::vector<ApiRecord> api;
  std::vector<GpuRecord> gpu;
  std::vector<OverheadRecord> overhead;
  std::unordered_map<uint32_t, uint64_t> op_of, annotation_of;  // correlation -> External id (CUSTOM0 / CUSTOM1)
  int64_t dropped = 0;                                          // cuptiActivityGetNumDroppedRecords
  bool accepting = true;  // false once the process exits: records are thrown away
};
Records& records() {
  static Records* r = new Records;  // leaked on purpose, as the pool
  return *r;
}

// Runtime calls that every op makes and nobody wants to see (Kineto's blocklist).
bool blocked_runtime_call(std::string_view name) {
  static constexpr std::string_view kBlocked[] = {
      "cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaEventCreate",
      "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaGetDeviceCount", "cudaStreamIsCapturing",
      "cudaDeviceGetAttribute", "cudaGetDeviceProperties", "cudaFuncGetAttributes", "cudaPointerGetAttributes",
      "cudaGetFuncBySymbol", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"};
  return std::find(std::begin(kBlocked), std::end(kBlocked), name) != std::end(kBlocked);
}

// Driver calls kept: launches, copies and sets (cuBLAS launches through cuLaunchKernelEx).
bool kept_driver_call(std::string_view name) {
  return name.starts_with("cuLaunch") || name.starts_with("cuMemcpy") || name.starts_with("cuMemset");
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string callback_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  const char* raw = nullptr;
  std::string name = cuptiGetCallbackName(domain, cbid, &raw) == CUPTI_SUCCESS && raw != nullptr
                         ? std::string(raw)
                         : fmt::format("cuda api {}", cbid);
  if (const size_t v = name.find("_v"); v != std::string::npos && v + 2 < name.size() && std::isdigit(name[v + 2]))
    name.resize(v);
  return name;
}

// The same, interned and cached per (domain, cbid) for the buffer thread.
std::string_view api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  static std::map<std::pair<int, uint32_t>, std::string_view> names;  // only the buffer thread uses it
  const auto key = std::make_pair(static_cast<int>(domain), cbid);
  if (const auto it = names.find(key); it != names.end()) return it->second;
  return names[key] = detail::intern(callback_name(domain, cbid));
}

// Which API calls CUPTI records, chosen at the source so that the calls we do
// not keep cost no record: every runtime call but the blocklist (cudaGetLastError
// follows every launch), and of the driver only launches, copies and sets
// (cuBLAS makes many other driver calls per GEMM). Computed once.
struct ApiSelection {
  std::vector<uint32_t> blocked_runtime, dropped_driver;
};
const ApiSelection& api_selection() {
  static const ApiSelection selection = [] {
    ApiSelection s;
    for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid)
      if (blocked_runtime_call(callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid))) s.blocked_runtime.push_back(cbid);
    for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
      if (!kept_driver_call(callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid))) s.dropped_driver.push_back(cbid);
    return s;
  }();
  return selection;
}

// The kernel's name demangled, and as the binary has it; cached per CUPTI name pointer.
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
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Runtime Triggered Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
    default: return "Unknown Overhead";
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  *max_records = 0;  // as many as fit
  if (!p.free.empty()) {
    *buffer = p.free.back();
    p.free.pop_back();
  } else if (p.allocated < kMaxBuffers) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    ++p.allocated;
  } else {
    *buffer = nullptr;  // CUPTI drops the records it cannot write (counted, reported)
    ++p.refused;
  }
  *size = *buffer != nullptr ? kBufferBytes : 0;
}

// Copies what we keep out of one buffer. Runs on a CUPTI thread (or in FlushAll's caller).
void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  Records& r = records();
  {
    std::lock_guard lock(r.mutex);
    CUpti_Activity* record = nullptr;
    while (r.accepting && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          const auto [name, mangled] = kernel_names(k->name);
          r.gpu.push_back({EventKind::kernel, static_cast<int64_t>(k->start), static_cast<int64_t>(k->end), k->deviceId,
                           k->contextId, k->streamId, k->correlationId, 0, name, mangled,
                           {k->gridX, k->gridY, k->gridZ}, {k->blockX, k->blockY, k->blockZ}, k->registersPerThread,
                           k->staticSharedMemory, k->dynamicSharedMemory, 0});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          const std::string_view name = detail::intern(fmt::format("Memcpy {} ({} -> {})", copy_kind(m->copyKind),
                                                                   memory_kind(m->srcKind), memory_kind(m->dstKind)));
          r.gpu.push_back({EventKind::memcpy, static_cast<int64_t>(m->start), static_cast<int64_t>(m->end), m->deviceId,
                           m->contextId, m->streamId, m->correlationId, static_cast<int64_t>(m->bytes), name, {}, {},
                           {}, 0, 0, 0, 0});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
          const std::string_view name = detail::intern(fmt::format("Memset ({})", memory_kind(m->memoryKind)));
          r.gpu.push_back({EventKind::memset, static_cast<int64_t>(m->start), static_cast<int64_t>(m->end), m->deviceId,
                           m->contextId, m->streamId, m->correlationId, static_cast<int64_t>(m->bytes), name, {}, {},
                           {}, 0, 0, 0, 0});
          break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
          const auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
          // CUPTI names only the context; convert() finds its device through the GPU work of that context.
          r.gpu.push_back({EventKind::cuda_sync, static_cast<int64_t>(y->start), static_cast<int64_t>(y->end), 0,
                           y->contextId, y->streamId, y->correlationId, 0, sync_name(y->type), {}, {}, {}, 0, 0, 0,
                           y->cudaEventId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
          const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
          const bool driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
          const std::string_view name =
              api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid);
          if (driver ? !kept_driver_call(name) : blocked_runtime_call(name)) break;
          r.api.push_back({static_cast<int64_t>(a->start), static_cast<int64_t>(a->end), a->correlationId, a->cbid,
                           static_cast<int64_t>(a->threadId), name, driver});
          break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
          if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) r.op_of[x->correlationId] = x->externalId;
          if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1)
            r.annotation_of[x->correlationId] = x->externalId;
          break;
        }
        case CUPTI_ACTIVITY_KIND_OVERHEAD: {
          const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
          r.overhead.push_back({static_cast<int64_t>(o->start), static_cast<int64_t>(o->end), overhead_name(o->overheadKind)});
          break;
        }
        default: break;
      }
    }
    size_t dropped = 0;
    if (context != nullptr && cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
      r.dropped += static_cast<int64_t>(dropped);
  }
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  p.free.push_back(buffer);
}

uint64_t CUPTIAPI steady_timestamp() { return static_cast<uint64_t>(now_ns()); }

void push_correlation(int kind, uint64_t id) {
  cuptiActivityPushExternalCorrelationId(
      kind == 0 ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, id);
}
void pop_correlation(int kind) {
  cuptiActivityPopExternalCorrelationId(
      kind == 0 ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, nullptr);
}
constexpr detail::CorrelationHooks kCuptiHooks{&push_correlation, &pop_correlation};

// The kinds enabled; api_selection() then switches single API calls off.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,          CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD};

// est. achieved occupancy, as Kineto computes it from the occupancy calculator.
void footprint(const GpuRecord& g, const cudaDeviceProp& prop, KernelInfo& k) {
  std::copy(std::begin(g.grid), std::end(g.grid), k.grid);
  std::copy(std::begin(g.block), std::end(g.block), k.block);
  k.registers_per_thread = g.registers;
  k.shared_memory = static_cast<int64_t>(g.static_smem) + g.dynamic_smem;
  const int block_size = g.block[0] * g.block[1] * g.block[2];
  if (prop.multiProcessorCount <= 0 || block_size <= 0) return;
  const double blocks = static_cast<double>(g.grid[0]) * g.grid[1] * g.grid[2];
  double blocks_per_sm = blocks / prop.multiProcessorCount;
  k.blocks_per_sm = blocks_per_sm;
  k.warps_per_sm = blocks_per_sm * block_size / prop.warpSize;
  cudaOccFuncAttributes attributes;
  attributes.maxThreadsPerBlock = INT32_MAX;
  attributes.numRegs = g.registers;
  attributes.sharedSizeBytes = static_cast<size_t>(g.static_smem);
  attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
  attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
  attributes.maxDynamicSharedSizeBytes = 0;
  const cudaOccDeviceState state{};
  const cudaOccDeviceProp occ_prop(prop);
  cudaOccResult result{};
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &occ_prop, &attributes, &state, block_size,
                                              static_cast<size_t>(g.dynamic_smem)) != CUDA_OCC_SUCCESS) {
    k.occupancy_percent = -99;
    return;
  }
  blocks_per_sm = std::min(blocks_per_sm, static_cast<double>(result.activeBlocksPerMultiprocessor));
  k.occupancy_percent = static_cast<int>(
      std::lround(100.0 * blocks_per_sm * block_size / static_cast<double>(prop.maxThreadsPerMultiProcessor)));
}

// ---- the source ---------------------------------------------------------------------------

class CuptiSource final : public DeviceActivitySource {
 public:
  void prepare() override {
    if (!usable()) return;
    if (enabled_) return;  // a second prepare() in a row (warmup then record)
    for (CUpti_ActivityKind kind : kKinds) {
      if (std::string e = TS_CUPTI_TRY(cuptiActivityEnable(kind)); !e.empty()) {
        fail(e);
        disable();
        return;
      }
    }
    // After the kinds: enabling a kind again would undo the per-call choices.
    // A refusal costs only speed (buffer_completed drops those records anyway): warn once.
    std::string refused;
    const ApiSelection& selection = api_selection();
    for (uint32_t cbid : selection.blocked_runtime)
      if (std::string e = TS_CUPTI_TRY(cuptiActivityEnableRuntimeApi(cbid, 0)); !e.empty()) refused = e;
    for (uint32_t cbid : selection.dropped_driver)
      if (std::string e = TS_CUPTI_TRY(cuptiActivityEnableDriverApi(cbid, 0)); !e.empty()) refused = e;
    if (!refused.empty() && !warned_api_selection_) {
      warned_api_selection_ = true;
      fmt::print(stderr, "warning: profiler: {}; CUPTI records every API call and the profiler drops the unkept ones\n",
                 refused);
    }
    enabled_ = true;
  }

  void start() override {
    if (no_gpu_) return;
    if (!failed_.empty()) return fallback_start();
    prepare();
    if (!failed_.empty()) return fallback_start();
    detail::set_correlation_hooks(&kCuptiHooks);
    using_fallback_ = false;
  }

  void end_window() override {
    if (no_gpu_) return;
    cudaDeviceSynchronize();  // the runtime records it: the trace shows the wait, as in PyTorch
  }

  void stop(Recording& rec) override {
    DeviceActivityInfo& info = rec.device_activity;
    if (no_gpu_) {
      info.error = failed_;
      return;
    }
    if (using_fallback_) {
      detail::cuda_event_fallback().stop(rec);
      info.source = "cuda_events";
      info.clock = "op CPU start + CUDA event offsets";
      info.error = failed_;
      return;
    }
    if (!enabled_) {  // torn down at process exit
      info.error = "CUPTI was torn down (the process is exiting)";
      return;
    }
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    disable();
    Records& r = records();
    std::vector<ApiRecord> api;
    std::vector<GpuRecord> gpu;
    std::vector<OverheadRecord> overhead;
    std::unordered_map<uint32_t, uint64_t> op_of, annotation_of;
    {
      std::lock_guard lock(r.mutex);
      api.swap(r.api);
      gpu.swap(r.gpu);
      overhead.swap(r.overhead);
      op_of.swap(r.op_of);
      annotation_of.swap(r.annotation_of);
      info.cupti_dropped_records = r.dropped;
      r.dropped = 0;
    }
    {
      Pool& p = pool();
      std::lock_guard lock(p.mutex);
      info.buffers_refused = p.refused;
      p.refused = 0;
    }
    info.source = "cupti";
    info.clock = clock_;
    convert(rec, api, gpu, overhead, op_of, annotation_of);
  }

  // Process exit with a profile still open: flush, disable, then drop whatever still arrives.
  void teardown() {
    if (enabled_) {
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      disable();
    }
    std::lock_guard lock(records().mutex);
    records().accepting = false;
  }

 private:
  // First use: is there a GPU, does CUPTI answer, and whose clock it reads.
  bool usable() {
    if (initialized_) return failed_.empty() && !no_gpu_;
    initialized_ = true;
    if (!cuda::is_available()) {
      no_gpu_ = true;
      failed_ = "no usable CUDA device: " + cuda::unavailable_reason();
      fmt::print(stderr, "warning: profiler: CUDA activity was asked for, but {}; only CPU events are recorded\n",
                 failed_);
      return false;
    }
    if (const char* v = std::getenv("TS_CUPTI_DISABLE"); v != nullptr && std::string_view(v) == "1") {
      fail("CUPTI disabled by TS_CUPTI_DISABLE=1 (a simulated failure)");
      return false;
    }
    if (std::string e = TS_CUPTI_TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)); !e.empty()) {
      fail(e);
      return false;
    }
    // System thread ids, so that launch calls land on the thread lanes of our CPU events.
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    if (cuptiActivityRegisterTimestampCallback(steady_timestamp) == CUPTI_SUCCESS) {
      clock_ = "CUPTI timestamp callback: the profiler's steady clock (CLOCK_MONOTONIC ns)";
    } else {
      uint64_t cupti_ns = 0;
      const int64_t before = now_ns();
      cuptiGetTimestamp(&cupti_ns);
      const int64_t after = now_ns();
      offset_ = before + (after - before) / 2 - static_cast<int64_t>(cupti_ns);
      clock_ = fmt::format("measured offset: steady = CUPTI + {} ns", offset_);
    }
    std::atexit([] { static_cast<CuptiSource&>(cupti_activity_source()).teardown(); });  // after CUPTI's own
    int count = 0;
    cudaGetDeviceCount(&count);
    props_.resize(static_cast<size_t>(count));
    for (int d = 0; d < count; ++d) cudaGetDeviceProperties(&props_[static_cast<size_t>(d)], d);
    return true;
  }

  void fail(const std::string& error) {
    failed_ = error;
    fmt::print(stderr,
               "\n*** profiler: CUPTI could not start: {}\n*** GPU time is measured per op with CUDA events instead "
               "(no kernel names, no launch flows); the table's footer says so.\n*** Check that libcupti.so matches "
               "the driver and that no other profiler (nsys, ncu) holds CUPTI.\n\n",
               error);
  }

  void fallback_start() {
    using_fallback_ = true;
    detail::cuda_event_fallback().start();
  }

  void disable() {
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
    enabled_ = false;
  }

  void convert(Recording& rec, std::vector<ApiRecord>& api, std::vector<GpuRecord>& gpu,
               std::vector<OverheadRecord>& overhead, const std::unordered_map<uint32_t, uint64_t>& op_of,
               const std::unordered_map<uint32_t, uint64_t>& annotation_of) {
    DeviceActivityInfo& info = rec.device_activity;
    const int64_t begin = rec.window_start_ns, end = rec.window_end_ns;
    std::unordered_map<uint64_t, int32_t> by_id;  // External id -> the CPU event
    for (size_t i = 0; i < rec.events.size(); ++i)
      if (rec.events[i].id != 0) by_id.emplace(rec.events[i].id, static_cast<int32_t>(i));
    const auto lookup = [](const std::unordered_map<uint32_t, uint64_t>& map, uint32_t correlation) -> uint64_t {
      const auto it = map.find(correlation);
      return it == map.end() ? 0 : it->second;
    };

    // Launch calls in the window; one per correlation (a runtime call wins over a driver call it made).
    std::unordered_map<uint32_t, int64_t> launch_start;  // correlation -> start of its call
    std::unordered_map<uint32_t, bool> before_window;    // correlations of calls from the wait/warmup steps
    std::stable_sort(api.begin(), api.end(), [](const ApiRecord& a, const ApiRecord& b) { return a.driver < b.driver; });
    for (const ApiRecord& a : api) {
      if (a.start < begin || a.start > end) {
        before_window[a.correlation] = true;
        continue;
      }
      if (a.correlation != 0 && launch_start.contains(a.correlation)) continue;
      launch_start[a.correlation] = a.start;
      Event& e = rec.events.emplace_back();
      e.kind = a.driver ? EventKind::cuda_driver : EventKind::cuda_runtime;
      e.name = a.name;
      e.start_ns = a.start;
      e.end_ns = std::max(a.end, a.start);
      e.tid = a.tid;
      e.correlation = a.correlation;
      e.cbid = static_cast<int>(a.cbid);
      uint64_t owner = lookup(op_of, a.correlation);
      e.id = owner;
      if (owner == 0) owner = lookup(annotation_of, a.correlation);
      if (const auto it = by_id.find(owner); owner != 0 && it != by_id.end()) {
        const Event& parent = rec.events[static_cast<size_t>(it->second)];
        // Only a scope on the same thread that encloses the call is its parent (trace lanes must nest).
        if (parent.tid == e.tid && parent.start_ns <= e.start_ns && e.end_ns <= parent.end_ns) e.parent = it->second;
      }
    }

    // GPU work launched in the window, with the op that launched it and its footprint.
    struct Span {
      int64_t start, end;
    };
    std::map<std::tuple<uint32_t, uint32_t, uint64_t>, Span> annotation_spans;  // (device, stream, annotation id)
    std::sort(gpu.begin(), gpu.end(), [](const GpuRecord& a, const GpuRecord& b) { return a.start < b.start; });
    std::unordered_map<uint32_t, uint32_t> device_of_context;  // sync records name only their context
    for (GpuRecord& g : gpu)
      if (g.kind != EventKind::cuda_sync) device_of_context.emplace(g.context, g.device);
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess) current = 0;
    for (GpuRecord& g : gpu) {
      if (g.kind == EventKind::cuda_sync) {  // no GPU work seen in that context: the thread's device
        const auto it = device_of_context.find(g.context);
        g.device = it != device_of_context.end() ? it->second : static_cast<uint32_t>(current);
      }
      const auto launched = launch_start.find(g.correlation);
      if (launched == launch_start.end()) {
        if (before_window.contains(g.correlation) || g.start < begin) continue;  // the wait/warmup steps' work
        ++info.unmatched_records;
      } else if (g.start < launched->second) {
        ++info.launch_order_violations;
      }
      Event& e = rec.events.emplace_back();
      e.kind = g.kind;
      e.name = g.name;
      e.mangled_name = g.mangled;
      e.start_ns = g.start;
      e.end_ns = std::max(g.end, g.start);
      e.id = lookup(op_of, g.correlation);
      e.device = static_cast<int>(g.device);
      e.stream = static_cast<int32_t>(g.stream);  // CUPTI's "none" (a device-wide sync) reads as -1
      e.tid = e.stream;
      e.correlation = g.correlation;
      e.bytes = g.bytes;
      e.cuda_event_id = g.cuda_event_id;
      if (g.kind == EventKind::kernel && g.device < props_.size()) footprint(g, props_[g.device], e.kernel_info);
      if (const uint64_t annotation = lookup(annotation_of, g.correlation);
          annotation != 0 && g.kind != EventKind::cuda_sync) {  // a wait is not the annotation's GPU work
        auto [it, inserted] = annotation_spans.try_emplace({g.device, g.stream, annotation}, Span{e.start_ns, e.end_ns});
        if (!inserted) {
          it->second.start = std::min(it->second.start, e.start_ns);
          it->second.end = std::max(it->second.end, e.end_ns);
        }
      }
    }
    // A user scope's span on each stream it launched work on (PyTorch's gpu_user_annotation).
    for (const auto& [key, span] : annotation_spans) {
      const auto& [device, stream, annotation] = key;
      const auto it = by_id.find(annotation);
      if (it == by_id.end()) continue;
      Event& e = rec.events.emplace_back();
      e.kind = EventKind::gpu_user_annotation;
      e.name = rec.events[static_cast<size_t>(it->second)].name;
      e.start_ns = span.start;
      e.end_ns = span.end;
      e.id = annotation;
      e.device = static_cast<int>(device);
      e.stream = stream;
      e.tid = stream;
    }
    for (const OverheadRecord& o : overhead) {
      if (o.start < begin || o.start > end) continue;
      Event& e = rec.events.emplace_back();
      e.kind = EventKind::overhead;
      e.name = o.name;
      e.start_ns = o.start;
      e.end_ns = std::max(o.end, o.start);
    }
    if (offset_ != 0)
      for (Event& e : rec.events)
        if (e.kind != EventKind::cpu_op && e.kind != EventKind::user_annotation && e.kind != EventKind::profiler_step &&
            e.kind != EventKind::memory && e.kind != EventKind::gpu_user_annotation) {
          e.start_ns += offset_;
          e.end_ns += offset_;
        }
    for (size_t d = 0; d < props_.size(); ++d) {
      const cudaDeviceProp& p = props_[d];
      rec.devices.push_back({static_cast<int>(d), p.name, static_cast<int64_t>(p.totalGlobalMem), p.major, p.minor,
                             p.maxThreadsPerBlock, p.maxThreadsPerMultiProcessor, p.regsPerBlock, p.warpSize,
                             static_cast<int64_t>(p.sharedMemPerBlock), p.multiProcessorCount, p.regsPerMultiprocessor,
                             static_cast<int64_t>(p.sharedMemPerBlockOptin),
                             static_cast<int64_t>(p.sharedMemPerMultiprocessor)});
    }
  }

  bool initialized_ = false, no_gpu_ = false, enabled_ = false, using_fallback_ = false;
  bool warned_api_selection_ = false;
  std::string failed_;  // why CUPTI cannot be used ("" while it can)
  std::string clock_;
  int64_t offset_ = 0;  // added to CUPTI times when the timestamp callback could not be installed
  std::vector<cudaDeviceProp> props_;
};

}  // namespace

DeviceActivitySource& cupti_activity_source() {
  static CuptiSource* source = new CuptiSource;  // leaked on purpose (see the header)
  return *source;
}

}  // namespace ts::profiler
