// ops/dispatch.h: the single point every op passes through.
//
//   user code -> ts::add (ops/elementwise/elementwise.cpp: fills an OpCall)
//             -> dispatch()  (this file: profiler scope, checks, variant choice)
//             -> the variant's run() (e.g. add_cpu_ref in elementwise_cpu_ref.cpp)
//
// Set a breakpoint on ts::dispatch to watch every op go by.
#pragma once

#include <string>
#include <string_view>

#include "ops/op_call.h"
#include "ops/registry.h"

namespace ts {

// Checks an op's inputs (throwing ts::Error naming the op and the shapes),
// sets call.device and allocates call.out (make_contiguous_tensor: an
// allocation, not a nested ts::empty, as in PyTorch). Runs inside the op's profiler
// scope, so allocations are attributed to the op.
using PrepareFn = void (*)(OpCall&);

// Opens the profiler scope, runs prepare, selects a variant, runs it and
// returns call.out. On CUDA, checks the launch and names the variant that failed.
Tensor dispatch(OpCall& call, PrepareFn prepare);

// The variant that would run for this (prepared) call: the scoped override,
// then TS_VARIANT, then the highest rung whose supports() accepts the call.
// A variant asked for by name that cannot run throws with its reason.
const Variant& select_variant(const OpCall& call);

// Forces a variant for this thread while in scope (like torch's sdpa_kernel):
//   { ts::VariantOverride use("mm/cpu/ref"); ts::matmul(a, b); }
// It applies to calls on the variant's device; nested overrides restore on exit.
class VariantOverride {
 public:
  explicit VariantOverride(std::string_view variant_name);
  ~VariantOverride();
  VariantOverride(const VariantOverride&) = delete;
  VariantOverride& operator=(const VariantOverride&) = delete;

 private:
  const Variant* variant_;
  const Variant* previous_[kDeviceTypes];
};

// Re-reads TS_VARIANT (a comma-separated list of variant names); it is read
// once at the first dispatch otherwise. Throws ts::Error on unknown names.
void reload_variant_environment();

}  // namespace ts
