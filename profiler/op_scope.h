// profiler/op_scope.h: the profiler's hook in the dispatcher.
//
// dispatch() opens an OpScope around every op. While no profiler records,
// the whole cost is one relaxed load and one predictable branch.
#pragma once

#include <atomic>

#include "ops/op_call.h"

namespace ts::profiler {

namespace detail {
extern std::atomic<bool> recording;  // true while a profiler records CPU activity
void op_begin(const OpCall& call);
void op_end(const OpCall& call);
}  // namespace detail

inline bool is_recording() { return detail::recording.load(std::memory_order_relaxed); }

class OpScope {
 public:
  explicit OpScope(const OpCall& call) : call_(is_recording() ? &call : nullptr) {
    if (call_) [[unlikely]] detail::op_begin(call);
  }
  ~OpScope() {
    if (call_) [[unlikely]] detail::op_end(*call_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  const OpCall* call_;
};

}  // namespace ts::profiler
