// profiler/collector.cpp: per-thread event buffers, the recording session, the memory observer.
#include "profiler/collector.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if TS_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>  // header-only, from the CUDA toolkit
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "profiler/graph_replays.h"
#include "profiler/op_args.h"
#include "profiler/op_scope.h"
#include "tensor/allocator.h"
#include "tensor/error.h"

namespace ts::profiler {

namespace {
// TS_NVTX=1: every op pushes an NVTX range (read once; no CUDA is touched for it). A build without
// the CUDA toolkit has no NVTX and says so.
const bool g_nvtx = [] {
  const char* v = std::getenv("TS_NVTX");
  const bool asked = v != nullptr && std::string_view(v) == "1";
#if TS_HAVE_CUDA
  return asked;
#else
  if (asked) std::fprintf(stderr, "warning: TS_NVTX=1: this build has no CUDA toolkit, hence no NVTX; no ranges\n");
  return false;
#endif
}();

#if TS_HAVE_CUDA
void nvtx_push(const char* name) { nvtxRangePushA(name); }
void nvtx_pop() { nvtxRangePop(); }
#else
void nvtx_push(const char*) {}
void nvtx_pop() {}
#endif
}  // namespace

namespace detail {
std::atomic<bool> recording{g_nvtx};
}  // namespace detail

namespace {
std::atomic<DeviceActivitySource*> g_device_source{nullptr};
std::atomic<const detail::CorrelationHooks*> g_correlation_hooks{nullptr};
}  // namespace

void detail::set_correlation_hooks(const CorrelationHooks* hooks) { g_correlation_hooks.store(hooks); }

void set_device_activity_source(DeviceActivitySource* source) { g_device_source.store(source); }
DeviceActivitySource* device_activity_source() { return g_device_source.load(); }

namespace detail {

namespace {

// What the hot path stores per scope: the fields known while the op runs,
// in 96 bytes (a full Event is built from it when the session stops). Small
// records mean fewer fresh pages touched per op, and page faults are what a
// profiler's per-op cost is mostly made of on a busy machine.
struct RawScope {
  std::string_view name;
  int64_t start = 0, end = 0;  // now_ticks(); end 0: still open
  uint64_t id = 0;
  const char* variant = nullptr;
  std::source_location loc;  // with_stack: one pointer
  int64_t flops = 0;
  int64_t self_cpu_memory = 0, self_device_memory = 0;
  int32_t parent = -1;        // index of the enclosing scope in this thread's buffer
  uint32_t inputs_begin = 0;  // record_shapes: [begin, begin + count) of ThreadBuffer::inputs
  uint16_t inputs_count = 0;
  bool has_loc = false;
  EventKind kind = EventKind::cpu_op;
};
static_assert(sizeof(RawScope) <= 96, "keep the per-op record small: it is what the hot path writes");

struct RawMemory {
  int64_t time;  // now_ticks()
  int64_t bytes, total_allocated, total_reserved;
  uint64_t addr;
  Device device;
  int32_t parent;  // the innermost open scope, -1 for none
};

// A (ticks, steady ns) pair read as close together as the clocks allow.
struct ClockPair {
  int64_t ticks, ns;
  static ClockPair now() {
    const int64_t before = now_ticks();
    const int64_t ns = now_ns();
    const int64_t after = now_ticks();
    return {before + (after - before) / 2, ns};
  }
};

// Ticks to steady ns on the line through the session's start and stop pairs.
struct TickConverter {
  ClockPair start;
  long double ns_per_tick = 1;
  TickConverter(ClockPair a, ClockPair b) : start(a) {
    if (b.ticks > a.ticks && b.ns > a.ns)
      ns_per_tick = static_cast<long double>(b.ns - a.ns) / static_cast<long double>(b.ticks - a.ticks);
  }
  int64_t ns(int64_t ticks) const {
    return start.ns + std::llround(static_cast<long double>(ticks - start.ticks) * ns_per_tick);
  }
};

// Records live in fixed-size chunks: appending never moves a record, so a
// buffer grows without copying what it already holds. A chunk is 2 MiB, asked
// to be one transparent huge page (MADV_HUGEPAGE; nothing changes where the
// kernel has THP off): with 4 KiB pages an op's record would cost a page fault
// every ~40 ops, and on a virtualised GPU host a fault costs microseconds.
template <typename T>
class Chunks {
 public:
  static constexpr size_t kBytes = size_t{2} << 20;
  static constexpr size_t kChunk = kBytes / sizeof(T);
  static_assert(std::is_trivially_destructible_v<T>, "chunks are freed without running destructors");

  size_t size() const { return size_; }
  T& operator[](size_t i) { return chunks_[i / kChunk].get()[i % kChunk]; }
  T& emplace_back() {
    if (size_ % kChunk == 0) chunks_.emplace_back(allocate());
    T* slot = chunks_.back().get() + size_ % kChunk;
    ++size_;
    return *new (slot) T{};
  }
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  static T* allocate() {
    void* p = std::aligned_alloc(kBytes, kBytes);
    if (p == nullptr) throw std::bad_alloc();
    madvise(p, kBytes, MADV_HUGEPAGE);  // a hint: failure leaves ordinary pages
    return static_cast<T*>(p);
  }

  std::vector<std::unique_ptr<T, Free>> chunks_;
  size_t size_ = 0;
};

}  // namespace

struct ThreadBuffer {
  std::mutex mutex;     // taken by the owning thread per event, and by stop_session() once
  bool closed = false;  // the session is over: late scope ends are ignored
  uint32_t session = 0;
  SessionConfig config;
  int64_t tid = 0;
  std::string thread_name;
  Chunks<RawScope> scopes;
  Chunks<RawMemory> memory;
  std::vector<InputMeta> inputs;
  std::vector<int32_t> open;  // indices of the open scopes, innermost last
  std::vector<GraphReplay> replays;  // the CUDA graph replays among the scopes
  int64_t dropped = 0;
  int64_t ended_early = 0;  // scopes ended with an enclosing user scope that ended first (end_scope)
  bool warned_ended_early = false;

  size_t recorded() const { return scopes.size() + memory.size(); }
};

namespace {

struct Session {
  uint32_t id = 0;  // 0: no session
  SessionConfig config;
  ClockPair start{0, 0};
  int64_t steady_to_epoch_ns = 0;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};

std::mutex g_session_mutex;  // guards g_session (and its list of buffers)
Session g_session;
uint32_t g_last_session_id = 0;
std::atomic<uint32_t> g_active_session{0};  // g_session.id while recording, else 0
std::atomic<uint64_t> g_next_id{1};         // "External id"s, unique per process
int g_captures = 0;                         // threads capturing a CUDA graph now (under g_session_mutex)
std::atomic<int> g_captures_relaxed{0};     // the same, for op_begin to read without the lock

// What `recording` holds when nothing changes it: a session, a capture or TS_NVTX=1 wants the ops.
void update_recording() { recording.store(g_session.id != 0 || g_captures > 0 || g_nvtx, std::memory_order_release); }

thread_local std::shared_ptr<ThreadBuffer> tl_buffer;
thread_local uint32_t tl_session = 0;

int64_t os_thread_id() {
  static thread_local const int64_t tid = static_cast<int64_t>(syscall(SYS_gettid));
  return tid;
}

std::string os_thread_name() {
  char name[64] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

std::string process_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? "tensorscope" : name;
}

// Offset from the steady clock to Unix-epoch nanoseconds, read once per session.
int64_t steady_to_epoch_offset() {
  const int64_t before = now_ns();
  const int64_t epoch = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const int64_t after = now_ns();
  return epoch - (before + (after - before) / 2);
}

// This thread's buffer in the running session (made on first use); nullptr when none runs.
ThreadBuffer* this_thread_buffer() {
  const uint32_t session = g_active_session.load(std::memory_order_acquire);
  if (session == 0) return nullptr;
  if (tl_session == session) [[likely]] return tl_buffer.get();
  std::lock_guard lock(g_session_mutex);
  if (g_session.id != session) return nullptr;  // stopped in the meantime
  auto buffer = std::make_shared<ThreadBuffer>();
  buffer->session = session;
  buffer->config = g_session.config;
  buffer->tid = os_thread_id();
  buffer->thread_name = os_thread_name();
  g_session.buffers.push_back(buffer);
  tl_buffer = std::move(buffer);
  tl_session = session;
  return tl_buffer.get();
}

// A new scope nested in the innermost open one, or nullptr (counted) when the buffer is full.
RawScope* append_scope(ThreadBuffer& b, int32_t* index) {
  if (b.recorded() >= b.config.max_events_per_thread) {
    ++b.dropped;
    return nullptr;
  }
  *index = static_cast<int32_t>(b.scopes.size());
  RawScope& s = b.scopes.emplace_back();
  s.parent = b.open.empty() ? -1 : b.open.back();
  return &s;
}

// Ends the open scope `index` at tick `end`; false when it is not open (it ended already, with an
// enclosing scope: see below). Scopes close innermost first (they are RAII), so this is the top of
// the stack, except when a scope is ended out of order (record_function a, b, then a.end() before
// b.end()). With `with_inner`, the scopes still open inside it end with it, at the same tick, so
// that every scope stays inside its parent and no Self time goes negative; their own ends are then
// ignored, and `*inner` names the innermost of them. A ProfilerStep closed by step() inside a user
// scope leaves it open instead (step() warns): that scope belongs to the user's next step too.
bool end_scope(ThreadBuffer& b, int32_t index, int64_t end, bool with_inner, std::string_view* inner = nullptr) {
  const auto it = std::find(b.open.rbegin(), b.open.rend(), index);
  if (it == b.open.rend()) return false;
  const auto at = std::next(it).base();
  b.scopes[static_cast<size_t>(index)].end = end;
  if (at + 1 != b.open.end() && inner != nullptr) *inner = b.scopes[static_cast<size_t>(b.open.back())].name;
  if (!with_inner) {
    b.open.erase(at);
    return true;
  }
  for (auto inside = at + 1; inside != b.open.end(); ++inside) b.scopes[static_cast<size_t>(*inside)].end = end;
  b.ended_early += b.open.end() - (at + 1);
  b.open.erase(at, b.open.end());
  return true;
}

// Every allocation and free while profile_memory records: charged to the
// innermost open scope of the allocating thread, and kept as a [memory] event.
void on_memory_event(const MemoryEvent& m) {
  ThreadBuffer* b = this_thread_buffer();
  if (b == nullptr) return;
  const int64_t t = now_ticks();
  std::lock_guard lock(b->mutex);
  if (b->closed || !b->config.profile_memory) return;
  const int32_t innermost = b->open.empty() ? -1 : b->open.back();
  if (innermost >= 0) {
    RawScope& scope = b->scopes[static_cast<size_t>(innermost)];
    (m.device.is_cpu() ? scope.self_cpu_memory : scope.self_device_memory) += m.bytes;
  }
  if (b->recorded() >= b->config.max_events_per_thread) {
    ++b->dropped;
    return;
  }
  b->memory.emplace_back() = {.time = t,
                              .bytes = m.bytes,
                              .total_allocated = m.total_allocated,
                              .total_reserved = m.total_reserved,
                              .addr = reinterpret_cast<uint64_t>(m.ptr),
                              .device = m.device,
                              .parent = innermost};
}

// The thread's records as Events, appended to `out` (parents offset to their
// place there). Scopes still open end at stop_ns, innermost first and one
// nanosecond apart, so that they stay strictly nested.
void append_events(ThreadBuffer& b, const TickConverter& clock, int64_t stop_ns, std::vector<Event>& out) {
  const auto offset = static_cast<int32_t>(out.size());
  for (size_t i = 0; i < b.scopes.size(); ++i) {
    const RawScope& s = b.scopes[i];
    Event& e = out.emplace_back();
    e.kind = s.kind;
    e.name = s.name;
    e.start_ns = clock.ns(s.start);
    if (s.end != 0) {
      e.end_ns = std::max(clock.ns(s.end), e.start_ns);
    } else {
      const auto depth = std::find(b.open.begin(), b.open.end(), static_cast<int32_t>(i)) - b.open.begin();
      e.end_ns = stop_ns + static_cast<int64_t>(b.open.size()) - 1 - depth;
    }
    e.id = s.id;
    e.tid = b.tid;
    e.parent = s.parent >= 0 ? s.parent + offset : -1;
    e.variant = s.variant;
    e.flops = s.flops;
    if (s.has_loc) e.call_site = CallSite::from(s.loc);
    e.self_cpu_memory = s.self_cpu_memory;
    e.self_device_memory = s.self_device_memory;
    e.inputs.assign(b.inputs.begin() + s.inputs_begin, b.inputs.begin() + s.inputs_begin + s.inputs_count);
  }
  for (size_t i = 0; i < b.memory.size(); ++i) {
    const RawMemory& m = b.memory[i];
    Event& e = out.emplace_back();
    e.kind = EventKind::memory;
    e.name = "[memory]";
    e.start_ns = e.end_ns = clock.ns(m.time);
    e.tid = b.tid;
    e.parent = m.parent >= 0 ? m.parent + offset : -1;
    e.bytes = m.bytes;
    e.total_allocated = m.total_allocated;
    e.total_reserved = m.total_reserved;
    e.addr = m.addr;
    e.memory_device = m.device;
  }
}

// Where begin_scope() put a scope.
struct OpenedScope {
  int32_t index = -1;       // its place in the thread's buffer
  bool correlated = false;  // its id went on the device source's correlation stack
};

// Opens a scope in a thread's buffer, whose lock the caller holds: the part
// every scope shares, op or user scope. `name()` gives its name and
// `details(b, s)` fills what is particular to the kind of scope (an op's
// inputs and call site, a user scope's location). The scope's id goes on the
// device source's correlation stack when the session records CUDA activity,
// and its start time is read last, so that none of this bookkeeping is
// charged to it. Returns false when nothing was recorded (the session is over
// or the buffer is full).
template <typename Name, typename Details>
[[gnu::always_inline]] inline bool begin_scope(ThreadBuffer& b, EventKind kind, Name&& name,
                                               CorrelationKind correlation, OpenedScope& opened, Details&& details) {
  if (b.closed) return false;
  RawScope* s = append_scope(b, &opened.index);
  if (s == nullptr) return false;
  s->kind = kind;
  s->name = name();
  s->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  details(b, *s);
  b.open.push_back(opened.index);
  if (b.config.use_cuda) [[unlikely]] {
    if (const CorrelationHooks* hooks = g_correlation_hooks.load(std::memory_order_acquire)) {
      hooks->push(correlation, s->id);
      opened.correlated = true;
    }
  }
  s->start = now_ticks();
  return true;
}

}  // namespace

ScopeToken op_begin(const RecordedOp& op) {
  ScopeToken none;
  if (g_nvtx) [[unlikely]] {
    nvtx_push(op.name());
    none = {.session = kNvtxOnly, .nvtx = true};
  }
  if (g_captures_relaxed.load(std::memory_order_relaxed) > 0) [[unlikely]] {
    none.captured = captured_op_begin(op);
    if (none.captured >= 0) none.session = kNvtxOnly;
  }
  ThreadBuffer* b = this_thread_buffer();
  if (b == nullptr) return none;
  std::lock_guard lock(b->mutex);
  OpenedScope opened;
  const bool recorded = begin_scope(
      *b, EventKind::cpu_op, [&op] { return op.name(); }, CorrelationKind::op, opened,
      [&op](ThreadBuffer& buffer, RawScope& s) {
        if (buffer.config.record_shapes) {
          s.inputs_begin = static_cast<uint32_t>(buffer.inputs.size());
          record_inputs(op, buffer.inputs);
          s.inputs_count = static_cast<uint16_t>(buffer.inputs.size() - s.inputs_begin);
        }
        if (buffer.config.with_stack) {
          // An op called by another op (matmul -> mm) shows the user's line, not ours.
          const RawScope* parent = s.parent >= 0 ? &buffer.scopes[static_cast<size_t>(s.parent)] : nullptr;
          if (parent != nullptr && parent->kind == EventKind::cpu_op) {
            s.loc = parent->loc;
            s.has_loc = parent->has_loc;
          } else {
            s.loc = op.call_site();
            s.has_loc = true;
          }
        }
      });
  if (!recorded) return none;
  return {.session = b->session,
          .index = opened.index,
          .correlated = opened.correlated,
          .nvtx = none.nvtx,
          .captured = none.captured};
}

void op_end(const RecordedOp& op, ScopeToken token) {
  const int64_t end = now_ticks();  // first: the bookkeeping below is not charged to the op
  if (token.correlated) [[unlikely]] g_correlation_hooks.load(std::memory_order_acquire)->pop(CorrelationKind::op);
  if (token.nvtx) [[unlikely]] nvtx_pop();
  if (token.captured >= 0) [[unlikely]] captured_op_end(op, token.captured);
  if (tl_session != token.session) return;  // the session that saw the op begin is over
  ThreadBuffer& b = *tl_buffer;
  std::lock_guard lock(b.mutex);
  if (b.closed) return;
  RawScope& s = b.scopes[static_cast<size_t>(token.index)];
  if (const char* variant = op.variant_name()) {  // null when the op threw before a variant was chosen
    s.variant = variant;
    if (b.config.with_flops) s.flops = op.flops();
  }
  end_scope(b, token.index, end, /*with_inner=*/true);
}

AnnotationHandle annotation_begin(EventKind kind, std::string_view name, const std::source_location* loc) {
  ThreadBuffer* b = this_thread_buffer();
  if (b == nullptr) return {};
  const std::string_view stored = intern(name);  // before the lock: interning takes a process-wide one
  std::lock_guard lock(b->mutex);
  OpenedScope opened;
  const bool recorded = begin_scope(
      *b, kind, [stored] { return stored; }, CorrelationKind::annotation, opened,
      [loc](ThreadBuffer& buffer, RawScope& s) {
        if (loc != nullptr && buffer.config.with_stack) {
          s.loc = *loc;
          s.has_loc = true;
        }
      });
  if (!recorded) return {};
  return {.buffer = tl_buffer, .index = opened.index, .correlated = opened.correlated};
}

AnnotationEnd annotation_end(AnnotationHandle& handle) {
  const int64_t end = now_ticks();
  AnnotationEnd out;
  if (handle.buffer == nullptr) return out;
  ThreadBuffer& b = *handle.buffer;
  // CUPTI's id stacks are per thread: pop only on the thread that pushed.
  if (handle.correlated && b.tid == os_thread_id())
    g_correlation_hooks.load(std::memory_order_acquire)->pop(CorrelationKind::annotation);
  bool warn = false;
  {
    std::lock_guard lock(b.mutex);
    if (!b.closed) {
      const RawScope& s = b.scopes[static_cast<size_t>(handle.index)];
      const bool user_scope = s.kind != EventKind::profiler_step;
      out.name = s.name;
      end_scope(b, handle.index, end, /*with_inner=*/user_scope, &out.inner);
      warn = user_scope && !out.inner.empty() && !std::exchange(b.warned_ended_early, true);
    }
  }
  if (warn)
    fmt::print(stderr, "warning: profiler: record_function '{}' ended while '{}', opened inside it, was still open: "
                       "'{}' ends with it (end scopes innermost first; this warning comes once per thread and recording)\n",
               out.name, out.inner, out.inner);
  handle.buffer.reset();
  return out;
}

ScopeToken replay_begin(std::shared_ptr<const CapturedGraph> graph) {
  ThreadBuffer* b = this_thread_buffer();
  if (b == nullptr) return {};
  std::lock_guard lock(b->mutex);
  OpenedScope opened;
  const bool recorded = begin_scope(
      *b, EventKind::cpu_op, [] { return std::string_view(kGraphReplayName); }, CorrelationKind::op, opened,
      [&graph](ThreadBuffer& buffer, RawScope& s) { buffer.replays.push_back({.id = s.id, .graph = std::move(graph)}); });
  if (!recorded) return {};
  return {.session = b->session, .index = opened.index, .correlated = opened.correlated};
}

void replay_end(ScopeToken token) {
  const int64_t end = now_ticks();
  if (token.correlated) g_correlation_hooks.load(std::memory_order_acquire)->pop(CorrelationKind::op);
  if (token.session == 0 || tl_session != token.session) return;
  ThreadBuffer& b = *tl_buffer;
  std::lock_guard lock(b.mutex);
  if (!b.closed) end_scope(b, token.index, end, /*with_inner=*/true);
}

void capture_started() {
  std::lock_guard lock(g_session_mutex);
  ++g_captures;
  g_captures_relaxed.store(g_captures, std::memory_order_relaxed);
  update_recording();
}

void capture_stopped() {
  std::lock_guard lock(g_session_mutex);
  if (g_captures > 0) --g_captures;
  g_captures_relaxed.store(g_captures, std::memory_order_relaxed);
  update_recording();
}

uint64_t new_external_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

std::string_view intern(std::string_view name) {
  static std::mutex mutex;
  static std::unordered_set<std::string> names;  // node-based: a stored string never moves
  std::lock_guard lock(mutex);
  return *names.emplace(name).first;
}

void start_session(const SessionConfig& config) {
  std::lock_guard lock(g_session_mutex);
  TS_CHECK(g_session.id == 0, "profiler: another profiler is already recording; stop it first (one records at a time)");
  g_session = Session{};
  g_session.id = ++g_last_session_id;
  if (g_session.id == 0) g_session.id = ++g_last_session_id;  // 0 means "none"
  g_session.config = config;
  g_session.steady_to_epoch_ns = steady_to_epoch_offset();
  if (config.profile_memory) set_memory_observer(&on_memory_event);
  g_session.start = ClockPair::now();
  g_active_session.store(g_session.id, std::memory_order_release);
  update_recording();
}

bool session_active() { return g_active_session.load(std::memory_order_acquire) != 0; }

Recording stop_session() {
  Session session;
  {
    std::lock_guard lock(g_session_mutex);
    if (g_session.id == 0) return {};
    g_active_session.store(0, std::memory_order_release);
    if (g_session.config.profile_memory) set_memory_observer(nullptr);
    session = std::move(g_session);
    g_session = Session{};
    update_recording();
  }
  // Close every buffer before reading the stop time: a thread that was inside an op when the session
  // ended may still open scopes until its buffer closes, and none may start after the window's end.
  for (const auto& b : session.buffers) {
    std::lock_guard lock(b->mutex);
    b->closed = true;
  }
  const ClockPair stop = ClockPair::now();
  const TickConverter clock(session.start, stop);

  Recording rec;
  rec.pid = static_cast<int64_t>(getpid());
  rec.process_name = process_name();
  rec.window_start_ns = session.start.ns;
  rec.window_end_ns = stop.ns;
  rec.steady_to_epoch_ns = session.steady_to_epoch_ns;
  rec.max_events_per_thread = session.config.max_events_per_thread;
  rec.use_cuda = session.config.use_cuda;
  rec.record_shapes = session.config.record_shapes;
  rec.profile_memory = session.config.profile_memory;
  rec.with_stack = session.config.with_stack;
  rec.with_flops = session.config.with_flops;

  size_t total = 0;
  for (const auto& b : session.buffers) total += b->recorded();
  rec.events.reserve(total);
  for (const auto& b : session.buffers) {
    std::lock_guard lock(b->mutex);
    rec.window_end_ns = std::max(rec.window_end_ns, stop.ns + static_cast<int64_t>(b->open.size()));
    append_events(*b, clock, stop.ns, rec.events);
    b->open.clear();
    b->scopes.clear();
    b->memory.clear();
    b->inputs = {};
    std::move(b->replays.begin(), b->replays.end(), std::back_inserter(rec.graph_replays));
    b->replays.clear();
    rec.dropped_events += b->dropped;
    rec.scopes_ended_early += b->ended_early;
    rec.threads.push_back({.tid = b->tid, .name = b->thread_name});
  }
  sort_events(rec.events);
  return rec;
}

void sort_events(std::vector<Event>& events) {
  const size_t n = events.size();
  const std::vector<int32_t> order = start_order(events);
  bool identity = true;
  for (size_t i = 0; i < n && identity; ++i) identity = order[i] == static_cast<int32_t>(i);
  if (identity) return;
  std::vector<int32_t> new_index(n);
  for (size_t i = 0; i < n; ++i) new_index[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
  std::vector<Event> sorted;
  sorted.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Event& e = events[static_cast<size_t>(order[i])];
    if (e.parent >= 0) e.parent = new_index[static_cast<size_t>(e.parent)];
    sorted.push_back(std::move(e));
  }
  events = std::move(sorted);
}

}  // namespace detail

std::vector<int32_t> start_order(const std::vector<Event>& events) {
  std::vector<int32_t> order(events.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const Event& x = events[static_cast<size_t>(a)];
    const Event& y = events[static_cast<size_t>(b)];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;
  });
  return order;
}

}  // namespace ts::profiler
