// profiler/cuda_event_fallback.cpp: per-op CUDA-event timing (see cuda_event_fallback.h).
//
// Every CUDA call is checked without throwing (cuda_call_check.h): the hooks
// run inside every op. An op whose events could not be made or recorded gets
// no timing; the failure is noted and reported with the recording.
#include "profiler/cuda_event_fallback.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "profiler/cuda_call_check.h"

namespace ts::profiler::detail {

namespace {

// One op's pair of events; `children` counts ops that began while it was open on its thread.
struct Timing {
  uint64_t id;
  cudaEvent_t begin = nullptr, end = nullptr;
  int children = 0;
  bool recorded = false;  // both events were made and the begin event recorded
  bool closed = false;    // the end event was recorded too
};

struct State {
  std::mutex mutex;
  std::vector<Timing> timings;
  std::vector<cudaEvent_t> spare;  // events are reused across sessions
  uint64_t generation = 1;         // bumped at every stop: ops still open then are forgotten
  cudaEvent_t reference = nullptr;
  int64_t reference_ns = 0;  // steady time at which the reference event was recorded
};
State& state() {
  static State* s = new State;  // leaked: ops may still pop while the process exits
  return *s;
}

thread_local std::vector<std::pair<uint64_t, size_t>> tl_open;  // (generation, index in State::timings), innermost last

// A spare event, or a new one; nullptr when none could be made.
cudaEvent_t take_event(State& s) {
  if (!s.spare.empty()) {
    cudaEvent_t e = s.spare.back();
    s.spare.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  return TS_PROFILER_CUDA_OK(cudaEventCreate(&e)) ? e : nullptr;
}

void give_back(State& s, cudaEvent_t e) {
  if (e != nullptr) s.spare.push_back(e);
}

// Events go on the legacy default stream: every op's stream (tensor/cuda_device.h).
void push(CorrelationKind kind, uint64_t id) {
  if (kind != CorrelationKind::op) return;  // user scopes get no timing of their own
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!tl_open.empty() && tl_open.back().first == s.generation) ++s.timings[tl_open.back().second].children;
  Timing t{.id = id, .begin = take_event(s), .end = take_event(s)};
  t.recorded = t.begin != nullptr && t.end != nullptr && TS_PROFILER_CUDA_OK(cudaEventRecord(t.begin, nullptr));
  tl_open.emplace_back(s.generation, s.timings.size());  // pushed even on failure: pop() must find its own entry
  s.timings.push_back(t);
}

void pop(CorrelationKind kind) {
  if (kind != CorrelationKind::op || tl_open.empty()) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto [generation, index] = tl_open.back();
  tl_open.pop_back();
  if (generation != s.generation) return;
  Timing& t = s.timings[index];
  t.closed = t.recorded && TS_PROFILER_CUDA_OK(cudaEventRecord(t.end, nullptr));
}

constexpr CorrelationHooks kHooks{&push, &pop};

}  // namespace

CudaEventFallback& cuda_event_fallback() {
  static CudaEventFallback* f = new CudaEventFallback;
  return *f;
}

void CudaEventFallback::start() {
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.reference == nullptr && !TS_PROFILER_CUDA_OK(cudaEventCreate(&s.reference))) s.reference = nullptr;
    // The reference event runs when recorded (the device is idle): its GPU time is its CPU time.
    TS_PROFILER_CUDA_OK(cudaDeviceSynchronize());
    if (s.reference != nullptr) TS_PROFILER_CUDA_OK(cudaEventRecord(s.reference, nullptr));
    s.reference_ns = now_ns();
  }
  set_correlation_hooks(&kHooks);
}

void CudaEventFallback::stop(Recording& rec) {
  State& s = state();
  TS_PROFILER_CUDA_OK(cudaDeviceSynchronize());
  std::lock_guard lock(s.mutex);
  std::unordered_map<uint64_t, size_t> by_id;
  for (size_t i = 0; i < rec.events.size(); ++i)
    if (rec.events[i].kind == EventKind::cpu_op) by_id.emplace(rec.events[i].id, i);
  for (const Timing& t : s.timings) {
    const auto it = by_id.find(t.id);
    float begin_ms = 0, end_ms = 0;
    if (s.reference != nullptr && t.closed && t.children == 0 && it != by_id.end() &&
        TS_PROFILER_CUDA_OK(cudaEventElapsedTime(&begin_ms, s.reference, t.begin)) &&
        TS_PROFILER_CUDA_OK(cudaEventElapsedTime(&end_ms, s.reference, t.end))) {
      const std::string_view op = rec.events[it->second].name;
      const int64_t start_ns = s.reference_ns + std::llround(begin_ms * 1e6);
      rec.events.push_back(Event{.kind = EventKind::kernel,
                                 .name = intern(std::string(op) + " [CUDA events]"),
                                 .start_ns = start_ns,
                                 .end_ns = std::max<int64_t>(start_ns, s.reference_ns + std::llround(end_ms * 1e6)),
                                 .id = t.id,
                                 .tid = 0,
                                 .device = 0,
                                 .stream = 0});
    }
    give_back(s, t.begin);
    give_back(s, t.end);
  }
  s.timings.clear();
  ++s.generation;
}

}  // namespace ts::profiler::detail
