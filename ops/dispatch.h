// ops/dispatch.h: the single point every op passes through.
//
//   user code -> ts::add (ops/elementwise/elementwise.cpp: fills an OpCall)
//             -> dispatch()  (this file: profiler scope, checks, variant choice)
//             -> run_kernel<&add_cpu_ref> (ops/op.h: the call unpacked into typed arguments)
//             -> add_cpu_ref (ops/elementwise/elementwise_cpu_ref.cpp)
//
// Set a breakpoint on ts::dispatch to watch every op go by.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "ops/op.h"
#include "ops/registry.h"

namespace ts {

// Opens the profiler scope, runs the op's prepare (checks; call.out allocated
// with make_contiguous_tensor: an allocation, not a nested ts::empty, as in
// PyTorch; inside the scope, so the op owns the allocation), selects a variant,
// runs it and returns call.out. On CUDA, checks the launch and names the variant that failed.
Tensor dispatch(OpCall& call);

// The variant that would run for this (prepared) call: the scoped override,
// then TS_VARIANT, then the highest rung whose supports() accepts the call.
// A variant asked for by name that cannot run throws with its reason. A forced variant's
// accepts() (so its supports()) is evaluated once per call: here, nowhere else on the way to its kernel.
const Variant& select_variant(const OpCall& call);

// Forces a variant for this thread while in scope (like torch's sdpa_kernel):
//   { ts::VariantOverride use("mm/cpu/ref"); ts::matmul(a, b); }
//   { ts::VariantOverride use("scaled_dot_product_attention", "flash_v1"); ... }  // op and rung
// It applies to calls of the variant's op only: the other ops in its scope (the ops a composite
// or a fused path issues) choose as usual. Nested overrides restore on exit.
// Mode::force (the default): every call of the op takes the variant, or throws ts::Error with the
// reason (naming the op, the variant and both devices when the call runs on a device the variant
// does not). Mode::prefer: a call the variant cannot run (another device, inputs its supports()
// refuses) goes to the next choice (an outer override, TS_VARIANT, the best rung), as a list of
// backends does in sdpa_kernel; calls() says how many calls the variant did run.
// TS_VARIANT differs: it names variants for the whole process, possibly several devices of one op,
// so a call on a device none of its names runs on takes the best rung, with a warning on stderr
// (once per variant); a named variant on the call's device that cannot run it throws, as here.
// An override belongs to the thread that made it; it may be destroyed in any order, and on any
// thread, and takes only itself out of its thread's stack.
namespace detail {
struct OverrideStack;  // one thread's overrides (ops/dispatch.cpp)
}
class VariantOverride {
 public:
  enum class Mode { force, prefer };
  explicit VariantOverride(std::string_view variant_name, Mode mode = Mode::force);
  // The rung of `op` ("scaled_dot_product_attention") named `rung` ("flash_v1", find_rung);
  // throws with no_rung_reason when there is none (a build without CUDA has no CUDA rung).
  VariantOverride(std::string_view op, std::string_view rung, Mode mode = Mode::force);
  // This rung, which need not be in the registry (a test's own op).
  explicit VariantOverride(const Variant& variant, Mode mode = Mode::force);
  ~VariantOverride();
  VariantOverride(const VariantOverride&) = delete;
  VariantOverride& operator=(const VariantOverride&) = delete;

  const Variant& variant() const { return *variant_; }
  Mode mode() const { return mode_; }
  int64_t calls() const { return calls_; }  // calls this override chose the variant for

  // Why the variant would refuse the first call of its op that make_call issues, in the rung's
  // own words (what it needs of the GPU, then its supports()); "" when it would run it. That call
  // is prepared (its inputs checked: a user mistake throws as usual), answered and never run, and
  // the profiler records nothing of it; calls before it run as usual. Throws when make_call
  // issues no call of the op.
  std::string refusal(const std::function<void()>& make_call) const;

 private:
  friend const Variant& select_variant(const OpCall& call);
  void push();  // onto this thread's stack, which stack_ keeps alive

  const Variant* variant_;
  Mode mode_;
  int64_t calls_ = 0;
  std::shared_ptr<detail::OverrideStack> stack_;
};

// Re-reads TS_VARIANT (a comma-separated list of variant names); it is read
// once at the first dispatch otherwise. Throws ts::Error on unknown names.
void reload_variant_environment();

}  // namespace ts
