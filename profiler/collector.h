// profiler/collector.h: how events are recorded: one buffer per thread, one session at a time.
//
// A session runs from start_session() to stop_session() (the active steps of a
// schedule). While it runs, every thread that opens a scope gets its own
// buffer: recording an op appends to it under a lock that only the owning
// thread and stop_session() ever take, so threads never wait on each other.
// A buffer holds at most max_events_per_thread events; past that, events are
// counted as dropped (the table footer and the trace metadata say how many).
//
// Profiler (profiler.h) is the public face; this layer is what it drives.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string_view>

#include "profiler/event.h"
#include "profiler/op_scope.h"

namespace ts::profiler {

// The profiler's clock: steady (monotonic) nanoseconds. Event times are on it.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What the hot path reads instead: the CPU's time-stamp counter (a few ns,
// against ~20 ns for the steady clock), turned into steady nanoseconds when
// the session stops by a line through two (ticks, ns) pairs taken at its
// start and stop. PyTorch does the same (rdtsc / cntvct_el0 + a converter).
inline int64_t now_ticks() {
#if defined(__x86_64__)
  return static_cast<int64_t>(__builtin_ia32_rdtsc());
#elif defined(__aarch64__)
  int64_t ticks;
  asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
  return ticks;
#else
  return now_ns();
#endif
}

// Where the CUDA side (CUPTI, cupti_source.h) plugs in: the profiler prepares
// it in warm-up, starts it with the capture window, and at stop it appends
// its GPU activity and API calls to the recording (ids, parents and
// correlations set as event.h describes). None of its methods throws: a
// failure is reported in the recording's device_activity instead.
class DeviceActivitySource {
 public:
  virtual ~DeviceActivitySource() = default;
  virtual void prepare() = 0;
  virtual void start() = 0;
  // Called just before the CPU side stops (the window's last moment): CUPTI's
  // source synchronizes the device here, so the trace shows the wait, as in PyTorch.
  virtual void end_window() {}
  virtual void stop(Recording& recording) = 0;
};
// Installs (or with nullptr removes) the source used when CUDA activity is asked for.
void set_device_activity_source(DeviceActivitySource* source);
DeviceActivitySource* device_activity_source();

namespace detail {

// How ops and user scopes tell the device source who launched what: each op
// pushes its External id on entry and pops it on exit, user scopes likewise on
// a stack of their own; CUPTI stamps every launch with the ids on top
// (innermost). The device source installs these while it records; ops call
// them only in a session that asked for CUDA activity.
enum class CorrelationKind : uint8_t { op, annotation };
struct CorrelationHooks {
  void (*push)(CorrelationKind kind, uint64_t id);
  void (*pop)(CorrelationKind kind);
};
void set_correlation_hooks(const CorrelationHooks* hooks);

struct SessionConfig {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
  bool with_flops = false;
  bool use_cuda = false;
  size_t max_events_per_thread = 1'000'000;
};

// Starts recording on every thread. Throws ts::Error when a session is already running.
void start_session(const SessionConfig& config);
// Stops recording and returns the events of every thread, sorted by start time.
// Scopes still open are closed at the stop time.
Recording stop_session();
bool session_active();

struct ThreadBuffer;

// A user scope (record_function, ProfilerStep#N) that may be closed from
// another thread than the one that opened it (step() is free to move).
struct AnnotationHandle {
  std::shared_ptr<ThreadBuffer> buffer;  // null: nothing was recorded
  int32_t index = -1;
  bool correlated = false;  // pushed its id on kind 1 (popped by annotation_end on the same thread)
};
AnnotationHandle annotation_begin(EventKind kind, std::string_view name, const std::source_location* loc);
// What annotation_end found: the scope's name, and when scopes opened inside it were still open, the
// innermost of them (empty otherwise). Those end with a user scope (so that the trace stays nested);
// a ProfilerStep leaves them open (the trace shows them overlapping).
struct AnnotationEnd {
  std::string_view name, inner;
};
AnnotationEnd annotation_end(AnnotationHandle& handle);

// A CUDA graph replay (profiler/graph_replays.h): a cpu_op named kGraphReplayName around the launch,
// whose External id goes on the device source's stack as an op's does, kept with its graph so that
// the recording can expand it. Returns what replay_end needs (nothing recorded: session 0).
ScopeToken replay_begin(std::shared_ptr<const CapturedGraph> graph);
void replay_end(ScopeToken token);

// While any thread captures a graph, ops are asked for even when no session records (the capture
// writes them down): is_recording() holds. Counted: captures on several threads may overlap.
void capture_started();
void capture_stopped();

// A fresh "External id" (unique per process), for events the profiler adds after the fact.
uint64_t new_external_id();

// A copy of name that lives as long as the process (annotation names).
std::string_view intern(std::string_view name);

// Orders events by (start, -end), keeping the order of ties, and remaps parent indices.
void sort_events(std::vector<Event>& events);

}  // namespace detail
}  // namespace ts::profiler
