// profiler/profiler.h: torch.profiler in C++: a profiler object, a schedule, steps, user scopes.
//
//   using namespace ts::profiler;
//   Profiler prof({.schedule = schedule(/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/1),
//                  .on_trace_ready = [](Profiler& p) { p.export_chrome_trace("trace.json"); },
//                  .record_shapes = true});
//   {
//     ProfilerGuard guard(prof);               // start(); stop() at the end of the block
//     for (int i = 0; i < 5; ++i) {
//       {
//         RecordFunction scope("matmul_add");  // a user annotation around the step's work
//         y = ts::add(ts::matmul(x, w), b);
//       }
//       prof.step();  // after the step's scopes close: ends ProfilerStep#i, opens ProfilerStep#i+1
//     }
//   }
//   fmt::print("{}", prof.key_averages().table({.sort_by = "cpu_time_total", .row_limit = 10}));
//
// Every op through ts::dispatch opens a scope while the profiler records
// (profiler/op_scope.h); nothing else in the library knows about it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/collector.h"
#include "profiler/event.h"
#include "profiler/key_averages.h"
#include "tensor/tensor.h"

namespace ts::profiler {

enum class Activity : uint8_t { CPU, CUDA };

// What a schedule asks for at a step (PyTorch's ProfilerAction).
enum class ProfilerAction : uint8_t { none, warmup, record, record_and_save };
const char* action_name(ProfilerAction action);

// torch.profiler.schedule: skip `skip_first` steps, then cycles of `wait`
// idle steps, `warmup` steps (tracing set up, nothing kept), `active`
// recorded steps; the last active step of a cycle hands the trace to
// on_trace_ready. `repeat` cycles (0: forever). With skip_first_wait the
// first cycle starts without its wait steps.
//
// However a Schedule is made (schedule(), or as a struct: `Schedule{.active = 3}`),
// it is checked before it is used: by the Profiler's constructor and by
// operator(). A bad field throws ts::Error naming it.
struct Schedule {
  int64_t wait = 0, warmup = 0, active = 1, repeat = 0, skip_first = 0;
  bool skip_first_wait = false;
  ProfilerAction operator()(int64_t step) const;
  // Throws ts::Error naming the first bad field: active must be > 0, the others >= 0,
  // and skip_first + wait + warmup + active must fit in int64.
  void validate() const;
};
// Checks the arguments like PyTorch (validate()); warns when warmup is 0.
Schedule schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat = 0, int64_t skip_first = 0,
                  bool skip_first_wait = false);

class Profiler;

struct ProfilerConfig {
  std::vector<Activity> activities{Activity::CPU};
  // With a schedule, every step is wrapped in a "ProfilerStep#N" scope (N counts
  // steps from 0 across cycles) and only the schedule's active steps record.
  // Without one, everything between start() and stop() records and there are
  // no step scopes.
  std::optional<Schedule> schedule;
  std::function<void(Profiler&)> on_trace_ready;  // at the end of each active window
  bool record_shapes = false;   // input dims, dtypes and strides of every op
  bool profile_memory = false;  // allocations: memory columns and [memory] events
  bool with_stack = false;      // the C++ source location of the user's call
  bool with_flops = false;      // FLOPs of GEMMs, attention, add and mul
  size_t max_events_per_thread = 1'000'000;  // past this, events are dropped and counted
};

// One profiler records at a time, and each one stops only the recording
// session it started itself:
//   - start() or step() that would begin recording while another profiler
//     records throws ts::Error ("another profiler is already recording") and
//     leaves this profiler stopped (running() is false); the other one keeps
//     recording, untouched;
//   - stop(), step() and the destructor of a profiler that holds no session
//     never end another profiler's session.
// Any exception out of step() (that one, a failing on_trace_ready, a CUPTI
// error) leaves the profiler stopped, with its own session, if it had one, ended
// and kept in recording().
class Profiler {
 public:
  // Checks the config: the schedule's fields (Schedule::validate) and max_events_per_thread.
  explicit Profiler(ProfilerConfig config = {});
  ~Profiler();  // stops (like leaving torch's `with profile(...)` block) if still running
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void start();
  void stop();
  // Marks the end of a step: closes ProfilerStep#N, moves the schedule on
  // (which may stop the trace and call on_trace_ready), opens ProfilerStep#N+1.
  void step();

  int64_t step_num() const { return step_num_; }
  ProfilerAction current_action() const { return action_; }
  bool running() const { return started_; }
  const ProfilerConfig& config() const { return config_; }

  // The last finished recording (the last active window with a schedule).
  const Recording& recording() const { return recording_; }
  const std::vector<Event>& events() const { return recording_.events; }
  int64_t dropped_events() const { return recording_.dropped_events; }

  EventList key_averages(bool group_by_input_shape = false, int group_by_stack_n = 0) const;
  // Kineto-compatible JSON; a path ending in .gz is gzipped. Written atomically.
  void export_chrome_trace(const std::string& path) const;

 private:
  void transit(ProfilerAction from, std::optional<ProfilerAction> to);
  void abandon() noexcept;
  void prepare_trace();
  void start_trace();
  bool stop_trace();  // false when this profiler held no session
  void trace_ready();
  void open_step();
  void close_step();

  ProfilerConfig config_;
  bool use_cuda_ = false;
  bool started_ = false;
  bool owns_session_ = false;  // this profiler started the collector's current session
  bool in_trace_ready_ = false;  // on_trace_ready is running (a stop() from it starts no window)
  int64_t step_num_ = 0;
  ProfilerAction action_ = ProfilerAction::record;
  detail::AnnotationHandle step_scope_;
  bool warned_nested_step_ = false;
  Recording recording_;
};

// start() now, stop() at the end of the scope: `with profile(...) as prof:`.
class ProfilerGuard {
 public:
  explicit ProfilerGuard(Profiler& profiler) : profiler_(profiler) { profiler_.start(); }
  ~ProfilerGuard();  // an exception from on_trace_ready here is printed, not thrown
  ProfilerGuard(const ProfilerGuard&) = delete;
  ProfilerGuard& operator=(const ProfilerGuard&) = delete;

 private:
  Profiler& profiler_;
};

// A named user scope (torch.profiler.record_function): an "user_annotation"
// event on this thread, the parent of the ops inside it. Costs one branch
// when no profiler records.
class RecordFunction {
 public:
  explicit RecordFunction(std::string_view name, Where loc = Where::current());
  ~RecordFunction() { end(); }
  void end();  // closes the scope early; the destructor then does nothing
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  detail::AnnotationHandle handle_;
};

// auto scope = ts::profiler::record_function("matmul_add");
[[nodiscard]] inline RecordFunction record_function(std::string_view name, Where loc = Where::current()) {
  return RecordFunction(name, loc);
}

}  // namespace ts::profiler
