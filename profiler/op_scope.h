// profiler/op_scope.h: the profiler's hook in the dispatcher.
//
// dispatch() opens an OpScope around every op. While no profiler records,
// the whole cost is one relaxed load and one predictable branch (and a
// branch on a local when the scope closes). While one records, op_begin()
// appends an event to this thread's buffer (profiler/collector.cpp) and
// op_end() stamps its end time.
#pragma once

#include <atomic>
#include <cstdint>

#include "profiler/recorded_op.h"

namespace ts::profiler {

namespace detail {

// True while a profiler records CPU activity, while a thread captures a CUDA graph (its
// ops are written down in the graph: profiler/graph_replays.h), and always with TS_NVTX=1
// (every op is then an NVTX range, so Nsight Systems shows op names).
extern std::atomic<bool> recording;

// Which recorded event a scope opened: the recording session (0: nothing was
// recorded) and the event's index in this thread's buffer.
struct ScopeToken {
  uint32_t session = 0;
  int32_t index = -1;
  bool correlated = false;  // pushed the op's id for the device source (CUDA activity recording)
  bool nvtx = false;        // opened an NVTX range (TS_NVTX=1); session is kNvtxOnly when nothing was recorded
  int32_t captured = -1;    // the op's index in the CUDA graph this thread captures (session kNvtxOnly when
                            // nothing else was recorded); -1: none
};
constexpr uint32_t kNvtxOnly = 0xffffffffu;

ScopeToken op_begin(const RecordedOp& op);
void op_end(const RecordedOp& op, ScopeToken token);

}  // namespace detail

inline bool is_recording() { return detail::recording.load(std::memory_order_relaxed); }

class OpScope {
 public:
  explicit OpScope(const RecordedOp& op) : op_(op) {
    if (is_recording()) [[unlikely]] token_ = detail::op_begin(op);
  }
  // Runs during stack unwinding too: an op that throws still closes its event.
  ~OpScope() {
    if (token_.session != 0) [[unlikely]] detail::op_end(op_, token_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  const RecordedOp& op_;
  detail::ScopeToken token_;
};

}  // namespace ts::profiler
