// ops/dispatch.h: the single point every op passes through.
//
//   user code -> ts::add (ops/elementwise/elementwise.cpp: fills an OpCall)
//             -> dispatch()  (this file: profiler scope, checks, variant choice)
//             -> run_kernel<&add_cpu_ref> (ops/op.h: the call unpacked into typed arguments)
//             -> add_cpu_ref (ops/elementwise/elementwise_cpu_ref.cpp)
//
// Set a breakpoint on ts::dispatch to watch every op go by.
#pragma once

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
// A variant asked for by name that cannot run throws with its reason.
const Variant& select_variant(const OpCall& call);

// Forces a variant for this thread while in scope (like torch's sdpa_kernel):
//   { ts::VariantOverride use("mm/cpu/ref"); ts::matmul(a, b); }
// It applies to calls on the variant's device; nested overrides restore on exit.
// Mode::force (the default): a call the variant cannot run throws with the
// reason. Mode::prefer: such a call goes to the next choice (an outer
// override, TS_VARIANT, the best rung), as a list of backends does in
// sdpa_kernel; calls() says how many calls the variant did run.
class VariantOverride {
 public:
  enum class Mode { force, prefer };
  explicit VariantOverride(std::string_view variant_name, Mode mode = Mode::force);
  ~VariantOverride();
  VariantOverride(const VariantOverride&) = delete;
  VariantOverride& operator=(const VariantOverride&) = delete;

  const Variant& variant() const { return *variant_; }
  Mode mode() const { return mode_; }
  int64_t calls() const { return calls_; }  // calls this override chose the variant for

 private:
  friend const Variant& select_variant(const OpCall& call);
  const Variant* variant_;
  Mode mode_;
  int64_t calls_ = 0;
};

// Re-reads TS_VARIANT (a comma-separated list of variant names); it is read
// once at the first dispatch otherwise. Throws ts::Error on unknown names.
void reload_variant_environment();

}  // namespace ts
