// profiler/profiler.cpp: the Profiler's state machine (torch.profiler's start/step/stop),
// schedules, and user scopes. The recording itself lives in collector.cpp.
#include "profiler/profiler.h"

#include <fmt/core.h>

#include <exception>

#include "profiler/chrome_trace.h"
#include "profiler/cupti_source.h"
#include "profiler/graph_replays.h"
#include "profiler/op_scope.h"
#include "tensor/error.h"

namespace ts::profiler {

const char* action_name(ProfilerAction action) {
  switch (action) {
    case ProfilerAction::none: return "NONE";
    case ProfilerAction::warmup: return "WARMUP";
    case ProfilerAction::record: return "RECORD";
    case ProfilerAction::record_and_save: return "RECORD_AND_SAVE";
  }
  return "?";
}

void Schedule::validate() const {
  const auto field = [this](const char* name, int64_t value, int64_t min) {
    TS_CHECK(value >= min, "profiler schedule: {} must be {}, got {} (schedule wait={} warmup={} active={} repeat={} "
             "skip_first={})",
             name, min == 0 ? ">= 0" : "> 0", value, wait, warmup, active, repeat, skip_first);
  };
  field("active", active, 1);
  field("wait", wait, 0);
  field("warmup", warmup, 0);
  field("repeat", repeat, 0);
  field("skip_first", skip_first, 0);
  int64_t total = 0;
  TS_CHECK(!__builtin_add_overflow(wait, warmup, &total) && !__builtin_add_overflow(total, active, &total) &&
               !__builtin_add_overflow(total, skip_first, &total),
           "profiler schedule: skip_first + wait + warmup + active overflows int64 (skip_first={} wait={} warmup={} "
           "active={})",
           skip_first, wait, warmup, active);
}

// The same arithmetic as torch.profiler.schedule, on a validated schedule (no
// division by zero; steps past int64 are never reached).
ProfilerAction Schedule::operator()(int64_t step) const {
  validate();
  TS_CHECK(step >= 0, "schedule: step must be >= 0, got {}", step);
  if (step < skip_first) return ProfilerAction::none;
  int64_t s = step - skip_first;
  // The first cycle starts without its wait steps; a step that far out is past any cycle count anyway.
  if (skip_first_wait && __builtin_add_overflow(s, wait, &s)) return ProfilerAction::none;
  const int64_t cycle = wait + warmup + active;
  if (repeat > 0 && s / cycle >= repeat) return ProfilerAction::none;
  const int64_t m = s % cycle;
  if (m < wait) return ProfilerAction::none;
  if (m < wait + warmup) return ProfilerAction::warmup;
  return m < cycle - 1 ? ProfilerAction::record : ProfilerAction::record_and_save;
}

Schedule schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat, int64_t skip_first,
                  bool skip_first_wait) {
  const Schedule out{wait, warmup, active, repeat, skip_first, skip_first_wait};
  out.validate();
  if (warmup == 0) fmt::print(stderr, "warning: profiler schedule: Profiler won't be using warmup, this can skew profiler results\n");
  return out;
}

Profiler::Profiler(ProfilerConfig config) : config_(std::move(config)) {
  for (Activity a : config_.activities) use_cuda_ = use_cuda_ || a == Activity::CUDA;
  TS_CHECK(config_.max_events_per_thread > 0 && config_.max_events_per_thread <= 500'000'000,
           "Profiler: max_events_per_thread must be in [1, 500000000], got {}", config_.max_events_per_thread);
  if (config_.schedule) config_.schedule->validate();
}

// A session never outlives its profiler: a profiler stopped from inside its own on_trace_ready
// may still hold one (see transit), and the destructor ends it.
Profiler::~Profiler() {
  try {
    if (started_) stop();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: profiler: stopping in the destructor: {}\n", e.what());
  }
  abandon();
}

ProfilerGuard::~ProfilerGuard() {
  try {
    profiler_.stop();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: profiler: stopping at the end of the guard's scope: {}\n", e.what());
  }
}

void Profiler::start() {
  TS_CHECK(!started_, "Profiler::start(): already started (call stop() first)");
  action_ = config_.schedule ? (*config_.schedule)(step_num_) : ProfilerAction::record;
  try {
    transit(ProfilerAction::none, action_);  // throws when another profiler records
  } catch (...) {
    abandon();
    throw;
  }
  started_ = true;
  open_step();
}

void Profiler::stop() {
  if (!started_) return;
  close_step();
  started_ = false;
  // From on_trace_ready: the window just saved was the last; the action step() moved to (a warm-up,
  // say) never began, so there is nothing to start or stop.
  if (in_trace_ready_) return;
  transit(action_, std::nullopt);
}

void Profiler::step() {
  TS_CHECK(started_, "Profiler::step(): the profiler is not started");
  close_step();
  const ProfilerAction previous = action_;
  ++step_num_;
  action_ = config_.schedule ? (*config_.schedule)(step_num_) : ProfilerAction::record;
  try {
    transit(previous, action_);
  } catch (...) {
    abandon();
    throw;
  }
  if (started_) open_step();  // else on_trace_ready called stop()
}

// After an exception in start() or step(): stopped, with this profiler's own
// session (if it still holds one) ended and kept; nobody else's is touched.
void Profiler::abandon() noexcept {
  started_ = false;
  if (!owns_session_) return;
  try {
    stop_trace();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: profiler: ending the session after an error: {}\n", e.what());
  }
}

// Only with a schedule, as in PyTorch, and only into this profiler's own session.
void Profiler::open_step() {
  if (!config_.schedule || !owns_session_) return;
  step_scope_ = detail::annotation_begin(EventKind::profiler_step, fmt::format("ProfilerStep#{}", step_num_), nullptr);
}

void Profiler::close_step() {
  if (!detail::annotation_end(step_scope_).inner.empty() && !warned_nested_step_) {
    fmt::print(stderr, "warning: profiler: step() was called inside an open scope (a record_function?): "
                       "ProfilerStep#{} ends before it and the trace shows them overlapping. Call step() "
                       "after the step's scopes close.\n",
               step_num_);
    warned_nested_step_ = true;
  }
}

// PyTorch's _transit_action table: what moving from one action to the next does.
void Profiler::transit(ProfilerAction from, std::optional<ProfilerAction> to) {
  using A = ProfilerAction;
  const auto records = [](A a) { return a == A::record || a == A::record_and_save; };
  if (!to) {  // stop()
    if (from == A::warmup) {
      start_trace();
      stop_trace();
    } else if (records(from)) {
      if (stop_trace()) trace_ready();
    }
    return;
  }
  switch (from) {
    case A::none:
      if (*to == A::warmup) prepare_trace();
      if (records(*to)) {
        prepare_trace();
        start_trace();
      }
      break;
    case A::warmup:
      if (*to == A::none) {
        fmt::print(stderr, "warning: profiler: Incorrect schedule: WARMUP followed by NONE\n");
        start_trace();
        stop_trace();
      }
      if (records(*to)) start_trace();
      break;
    case A::record:
      if (*to == A::none || *to == A::warmup) {
        fmt::print(stderr, "warning: profiler: Incorrect schedule: RECORD followed by {}\n", action_name(*to));
        stop_trace();
      }
      break;
    case A::record_and_save:
      if (stop_trace()) trace_ready();
      if (!started_) break;  // on_trace_ready called stop(): no next window
      if (*to == A::warmup) prepare_trace();
      if (records(*to)) {
        prepare_trace();
        start_trace();
      }
      break;
  }
}

namespace {
// The source that records CUDA activity: one a test installed, else CUPTI
// (made on first use, so CPU-only profiles never load or touch it).
DeviceActivitySource* cuda_source() {
  if (DeviceActivitySource* source = device_activity_source()) return source;
  return &cupti_activity_source();
}
}  // namespace

void Profiler::prepare_trace() {
  // CUPTI is shared: never set it up under another profiler's recording.
  TS_CHECK(owns_session_ || !detail::session_active(),
           "profiler: another profiler is already recording; stop it first (one records at a time)");
  if (use_cuda_) cuda_source()->prepare();
}

void Profiler::start_trace() {
  DeviceActivitySource* source = use_cuda_ ? cuda_source() : nullptr;
  detail::SessionConfig session;
  session.record_shapes = config_.record_shapes;
  session.profile_memory = config_.profile_memory;
  session.with_stack = config_.with_stack;
  session.with_flops = config_.with_flops;
  session.use_cuda = use_cuda_;
  session.max_events_per_thread = config_.max_events_per_thread;
  detail::start_session(session);  // throws when another profiler records
  owns_session_ = true;
  if (use_cuda_ && source != nullptr) source->start();
}

// Ends this profiler's session; a profiler that holds none (its start_trace
// failed, or it never recorded) has nothing to stop and keeps its last recording.
bool Profiler::stop_trace() {
  if (!owns_session_) return false;
  owns_session_ = false;
  DeviceActivitySource* source = use_cuda_ ? cuda_source() : nullptr;
  std::exception_ptr window_error;  // the session ends even when CUPTI fails
  try {
    if (source != nullptr) source->end_window();
  } catch (...) {
    window_error = std::current_exception();
  }
  recording_ = detail::stop_session();
  if (window_error) std::rethrow_exception(window_error);
  if (source != nullptr) {
    source->stop(recording_);
    detail::sort_events(recording_.events);
  }
  expand_graph_replays(recording_);  // after the GPU work joined: it is charged to the captured ops
  return true;
}

// on_trace_ready may throw anything: what is not a std::exception becomes a ts::Error, so that every
// caller (step(), stop(), the guard's and the profiler's destructors) can report it.
void Profiler::trace_ready() {
  if (!config_.on_trace_ready) return;
  in_trace_ready_ = true;
  try {
    config_.on_trace_ready(*this);
    in_trace_ready_ = false;
  } catch (const std::exception&) {
    in_trace_ready_ = false;
    throw;
  } catch (...) {
    in_trace_ready_ = false;
    fail("profiler: on_trace_ready threw an exception that is not a std::exception (after step {})", step_num_);
  }
}

EventList Profiler::key_averages(bool group_by_input_shape, int group_by_stack_n) const {
  return profiler::key_averages(recording_, group_by_input_shape, group_by_stack_n);
}

void Profiler::export_chrome_trace(const std::string& path) const { profiler::export_chrome_trace(recording_, path); }

RecordFunction::RecordFunction(std::string_view name, Where loc) {
  if (is_recording()) [[unlikely]] handle_ = detail::annotation_begin(EventKind::user_annotation, name, &loc);
}

void RecordFunction::end() {
  if (handle_.buffer != nullptr) detail::annotation_end(handle_);
}

}  // namespace ts::profiler
