// ops/dispatch.cpp: the one choke point: profiler scope, checks, variant choice, the call.
#include "ops/dispatch.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/op_scope.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"

namespace ts {

namespace {

// Overrides indexed [op][device type]. A variant for device "any" fills both slots.
using OverrideTable = const Variant* [kNumOps][kDeviceTypes];

thread_local OverrideTable scoped_overrides{};  // VariantOverride, per thread
OverrideTable env_overrides{};                 // TS_VARIANT, process-wide

// Parses into a fresh table and installs it only once every name is known: a bad
// TS_VARIANT throws and leaves the previous choices in place, never half of the new ones.
void parse_variant_environment() {
  OverrideTable parsed{};
  const char* env = std::getenv("TS_VARIANT");
  std::string_view list(env != nullptr ? env : "");
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);  // "a, b" reads as "a,b"
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) continue;
    const Variant* v = find_variant(name);
    TS_CHECK(v != nullptr, "TS_VARIANT: unknown variant '{}' (names look like mm/cpu/ref; ts_bench --list prints them)",
             name);
    for (int d = 0; d < kDeviceTypes; ++d)
      if (v->runs_on(static_cast<DeviceType>(d))) parsed[static_cast<int>(v->op)][d] = v;
  }
  for (int op = 0; op < kNumOps; ++op)
    for (int d = 0; d < kDeviceTypes; ++d) env_overrides[op][d] = parsed[op][d];
}

// A variant asked for by name must run, or say why not.
const Variant& forced(const Variant& v, const OpCall& call, const char* source) {
  if (v.supports != nullptr) {
    std::string why;
    TS_CHECK(v.supports(call, &why), "{}: variant {} (chosen by {}) cannot run this call: {}", op_name(call.op),
             v.name, source, why);
  }
  return v;
}

}  // namespace

void reload_variant_environment() { parse_variant_environment(); }

const Variant& select_variant(const OpCall& call) {
  static const bool env_parsed = (parse_variant_environment(), true);  // once, at the first dispatch
  (void)env_parsed;
  const int op = static_cast<int>(call.op);
  const int device = static_cast<int>(call.device.type);

  if (const Variant* v = scoped_overrides[op][device]) return forced(*v, call, "VariantOverride");
  if (const Variant* v = env_overrides[op][device]) return forced(*v, call, "TS_VARIANT");

  const auto candidates = variants_for(call.op, call.device.type);
  for (const Variant* v : candidates)
    if (v->supports == nullptr || v->supports(call, nullptr)) return *v;

  // Nothing can run: say what each candidate objected to.
  std::string reasons;
  for (const Variant* v : candidates) {
    std::string why;
    v->supports(call, &why);
    reasons += fmt::format("\n  {}: {}", v->name, why);
  }
  fail("{}: no variant runs on {} for these inputs{}", op_name(call.op), call.device.str(),
       candidates.empty() ? std::string(" (none is registered for this device)") : reasons);
}

Tensor dispatch(OpCall& call, PrepareFn prepare) {
  profiler::OpScope scope(call);
  prepare(call);
  const Variant& variant = select_variant(call);
  call.variant = &variant;
  if (variant.device == VariantDevice::cuda) {
    // Kernels launch on the call's GPU; a failed launch is reported here, naming
    // the variant (with TS_LAUNCH_BLOCKING=1 after a synchronize, so that an
    // asynchronous fault is pinned on this op). Views and composites (device
    // "any") launch nothing themselves and skip both.
    cuda::set_device(call.device.index);
    try {
      variant.run(call);
    } catch (...) {
      cuda::clear_launch_error();  // the exception speaks for this op; a kept launch error must not reach the next
      throw;
    }
    cuda::check_launch(variant.name);
  } else {
    variant.run(call);
  }
  return std::move(call.out);
}

VariantOverride::VariantOverride(std::string_view variant_name) : variant_(find_variant(variant_name)) {
  TS_CHECK(variant_ != nullptr, "VariantOverride: unknown variant '{}'", variant_name);
  const int op = static_cast<int>(variant_->op);
  for (int d = 0; d < kDeviceTypes; ++d) {
    previous_[d] = scoped_overrides[op][d];
    if (variant_->runs_on(static_cast<DeviceType>(d))) scoped_overrides[op][d] = variant_;
  }
}

VariantOverride::~VariantOverride() {
  const int op = static_cast<int>(variant_->op);
  for (int d = 0; d < kDeviceTypes; ++d) scoped_overrides[op][d] = previous_[d];
}

}  // namespace ts
