// profiler/cupti_source.cpp: the CUPTI source's life cycle (see cupti_source.h), wired from its parts:
//
//   cupti_buffers.h        the buffers CUPTI writes records into, and what its callbacks keep
//   cupti_decode.h         one CUPTI record -> the fields we keep of it
//   cupti_api_selection.h  which runtime and driver calls are recorded at all
//   cupti_records.h        kept records -> Events, when the profile stops
//   kernel_footprint.h     a kernel's occupancy, for the trace
//   cuda_call_check.h      how every CUDA and CUPTI call is checked without throwing
//
// CUPTI reads the profiler's own clock through a timestamp callback, so CPU
// and GPU events need no conversion; where that callback cannot be installed,
// the offset between the two clocks is measured once and added at stop.
#include "profiler/cupti_source.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/core.h>

#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/cuda_call_check.h"
#include "profiler/cuda_event_fallback.h"
#include "profiler/cupti_api_selection.h"
#include "profiler/cupti_buffers.h"
#include "profiler/cupti_records.h"
#include "tensor/cuda_device.h"

namespace ts::profiler {

namespace {

uint64_t CUPTIAPI steady_timestamp() { return static_cast<uint64_t>(now_ns()); }

// Ops push their External id as CUSTOM0, user scopes as CUSTOM1; CUPTI stamps
// every launch with the innermost id of each kind.
CUpti_ExternalCorrelationKind external_kind(detail::CorrelationKind kind) {
  return kind == detail::CorrelationKind::op ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
                                             : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
}
void push_correlation(detail::CorrelationKind kind, uint64_t id) {
  TS_CUPTI_OK(cuptiActivityPushExternalCorrelationId(external_kind(kind), id));
}
void pop_correlation(detail::CorrelationKind kind) {
  TS_CUPTI_OK(cuptiActivityPopExternalCorrelationId(external_kind(kind), nullptr));
}
constexpr detail::CorrelationHooks kCuptiHooks{&push_correlation, &pop_correlation};

// The activity kinds enabled for a window; switch_off_unkept_api_calls() then
// turns single API calls off.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,          CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,          CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD};
constexpr size_t kKindCount = std::size(kKinds);

class CuptiSource final : public DeviceActivitySource {
 public:
  // Every window: the activity kinds on, then the API calls we drop off at the source.
  void prepare() override {
    if (!usable()) return;
    if (enabled_) return;  // a second prepare() in a row (warmup then record)
    for (size_t i = 0; i < kKindCount; ++i) {
      if (std::string e = TS_CUPTI_TRY(cuptiActivityEnable(kKinds[i])); !e.empty()) {
        fail(e);
        disable(i);
        return;
      }
    }
    // A refusal costs only speed (the decoder drops those records anyway): warn once.
    if (const std::string refused = cupti::switch_off_unkept_api_calls(); !refused.empty() && !warned_api_selection_) {
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
    TS_PROFILER_CUDA_OK(cudaDeviceSynchronize());  // the runtime records it: the trace shows the wait, as in PyTorch
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
      detail::report_failed_calls(info);
      return;
    }
    if (!enabled_) {  // torn down at process exit
      info.error = "CUPTI was torn down (the process is exiting)";
      return;
    }
    TS_CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    disable(kKindCount);
    cupti::TakenRecords taken = cupti::take_records();
    info.source = "cupti";
    info.clock = clock_;
    info.cupti_dropped_records = taken.cupti_dropped;
    info.buffers_refused = taken.buffers_refused;
    cupti::append_cupti_events(
        taken.kept, {.clock_offset_ns = offset_, .devices = devices_, .current_device = current_device()}, rec);
    detail::report_failed_calls(info);
  }

  // Process exit with a profile still open: flush, disable, then drop whatever still arrives.
  void teardown() {
    if (enabled_) {
      TS_CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
      disable(kKindCount);
    }
    cupti::stop_keeping_records();
  }

 private:
  // First use: is there a GPU, does CUPTI answer, whose clock it reads, which devices there are.
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
    if (std::string e = TS_CUPTI_TRY(cuptiActivityRegisterCallbacks(cupti::buffer_requested, cupti::buffer_completed));
        !e.empty()) {
      fail(e);
      return false;
    }
    // System thread ids, so that launch calls land on the thread lanes of our CPU events.
    TS_CUPTI_OK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
    install_clock();
    std::atexit([] { static_cast<CuptiSource&>(cupti_activity_source()).teardown(); });  // after CUPTI's own
    read_devices();
    return true;
  }

  // CUPTI reads the profiler's clock through a callback; where it cannot, the
  // offset from CUPTI's clock to ours is measured once, halfway through a read.
  void install_clock() {
    if (cuptiActivityRegisterTimestampCallback(steady_timestamp) == CUPTI_SUCCESS) {
      clock_ = "CUPTI timestamp callback: the profiler's steady clock (CLOCK_MONOTONIC ns)";
      return;
    }
    uint64_t cupti_ns = 0;
    const int64_t before = now_ns();
    const bool read = TS_CUPTI_OK(cuptiGetTimestamp(&cupti_ns));
    const int64_t after = now_ns();
    if (!read) {
      clock_ = "CUPTI's own: neither its timestamp callback nor its clock could be read (GPU and CPU times may not align)";
      return;
    }
    offset_ = before + (after - before) / 2 - static_cast<int64_t>(cupti_ns);
    clock_ = fmt::format("measured offset: steady = CUPTI + {} ns", offset_);
  }

  // Every device's properties, by index (kernel footprints, the trace's
  // deviceProperties); the list ends before a device that cannot be read.
  void read_devices() {
    int count = 0;
    if (!TS_PROFILER_CUDA_OK(cudaGetDeviceCount(&count))) return;
    devices_.resize(static_cast<size_t>(count));
    for (int d = 0; d < count; ++d) {
      if (!TS_PROFILER_CUDA_OK(cudaGetDeviceProperties(&devices_[static_cast<size_t>(d)], d))) {
        devices_.resize(static_cast<size_t>(d));
        return;
      }
    }
  }

  // The calling thread's device: a sync on a context that ran no recorded work happened there.
  static int current_device() {
    int device = 0;
    if (!TS_PROFILER_CUDA_OK(cudaGetDevice(&device))) device = 0;
    return device;
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

  // Disables the first `count` kinds of kKinds (those enabled).
  void disable(size_t count) {
    for (size_t i = 0; i < count; ++i) TS_CUPTI_OK(cuptiActivityDisable(kKinds[i]));
    enabled_ = false;
  }

  bool initialized_ = false, no_gpu_ = false, enabled_ = false, using_fallback_ = false;
  bool warned_api_selection_ = false;
  std::string failed_;  // why CUPTI cannot be used ("" while it can)
  std::string clock_;
  int64_t offset_ = 0;  // added to CUPTI times when the timestamp callback could not be installed
  std::vector<cudaDeviceProp> devices_;
};

}  // namespace

DeviceActivitySource& cupti_activity_source() {
  static CuptiSource* source = new CuptiSource;  // leaked on purpose (see the header)
  return *source;
}

}  // namespace ts::profiler
