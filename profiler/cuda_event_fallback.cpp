// profiler/cuda_event_fallback.cpp: per-op CUDA-event timing (see cuda_event_fallback.h).
#include "profiler/cuda_event_fallback.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ts::profiler::detail {

namespace {

// One op's pair of events; `children` counts ops that began while it was open on its thread.
struct Timing {
  uint64_t id;
  cudaEvent_t begin, end;
  int children = 0;
  bool closed = false;
};

struct State {
  std::mutex mutex;
  std::vector<Timing> timings;
  std::vector<cudaEvent_t> spare;  // events are reused across sessions
  uint64_t generation = 1;  // bumped at every stop: ops still open then are forgotten
  cudaEvent_t reference = nullptr;
  int64_t reference_ns = 0;  // steady time at which the reference event was recorded
};
State& state() {
  static State* s = new State;  // leaked: ops may still pop while the process exits
  return *s;
}

thread_local std::vector<std::pair<uint64_t, size_t>> tl_open;  // (generation, index in State::timings), innermost last

cudaEvent_t take_event(State& s) {
  if (!s.spare.empty()) {
    cudaEvent_t e = s.spare.back();
    s.spare.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  cudaEventCreate(&e);
  return e;
}

void push(int kind, uint64_t id) {
  if (kind != 0) return;  // user scopes get no timing of their own
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!tl_open.empty() && tl_open.back().first == s.generation) ++s.timings[tl_open.back().second].children;
  Timing t{id, take_event(s), take_event(s)};
  cudaEventRecord(t.begin, nullptr);  // the legacy default stream: every op's stream (tensor/cuda_device.h)
  tl_open.emplace_back(s.generation, s.timings.size());
  s.timings.push_back(t);
}

void pop(int kind) {
  if (kind != 0 || tl_open.empty()) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const auto [generation, index] = tl_open.back();
  tl_open.pop_back();
  if (generation != s.generation) return;
  Timing& t = s.timings[index];
  cudaEventRecord(t.end, nullptr);
  t.closed = true;
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
    if (s.reference == nullptr) cudaEventCreate(&s.reference);
    cudaDeviceSynchronize();  // the reference event runs when recorded: its GPU time is its CPU time
    cudaEventRecord(s.reference, nullptr);
    s.reference_ns = now_ns();
  }
  set_correlation_hooks(&kHooks);
}

void CudaEventFallback::stop(Recording& rec) {
  State& s = state();
  cudaDeviceSynchronize();
  std::lock_guard lock(s.mutex);
  std::unordered_map<uint64_t, size_t> by_id;
  for (size_t i = 0; i < rec.events.size(); ++i)
    if (rec.events[i].kind == EventKind::cpu_op) by_id.emplace(rec.events[i].id, i);
  for (const Timing& t : s.timings) {
    const auto it = by_id.find(t.id);
    if (t.closed && t.children == 0 && it != by_id.end()) {
      float begin_ms = 0, end_ms = 0;
      if (cudaEventElapsedTime(&begin_ms, s.reference, t.begin) == cudaSuccess &&
          cudaEventElapsedTime(&end_ms, s.reference, t.end) == cudaSuccess) {
        const std::string_view op = rec.events[it->second].name;
        Event& e = rec.events.emplace_back();
        e.kind = EventKind::kernel;
        e.name = intern(std::string(op) + " [CUDA events]");
        e.start_ns = s.reference_ns + static_cast<int64_t>(std::llround(begin_ms * 1e6));
        e.end_ns = std::max<int64_t>(e.start_ns, s.reference_ns + std::llround(end_ms * 1e6));
        e.id = t.id;
        e.device = 0;
        e.stream = 0;
        e.tid = 0;
      }
    }
    s.spare.push_back(t.begin);
    s.spare.push_back(t.end);
  }
  s.timings.clear();
  ++s.generation;
}

}  // namespace ts::profiler::detail
