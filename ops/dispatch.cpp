// ops/dispatch.cpp: the one choke point: profiler scope, checks, variant choice, the call.
#include "ops/dispatch.h"

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "profiler/op_scope.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"

namespace ts {

namespace {

// Forced variants. Both lists are empty unless something forces a variant, so
// the common path pays one emptiness check each. A scoped override is searched
// innermost first; a variant for device "any" applies to every device.
thread_local std::vector<VariantOverride*> scoped_overrides;  // VariantOverride, per thread, a stack
std::vector<const Variant*> env_overrides;                     // TS_VARIANT, process-wide

bool applies(const Variant& v, const OpCall& call) { return v.op == &call.op && v.runs_on(call.device.type); }

// Parses into a fresh list and installs it only once every name is known: a bad
// TS_VARIANT throws and leaves the previous choices in place, never half of the new ones.
void parse_variant_environment() {
  std::vector<const Variant*> parsed;
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
    TS_CHECK(v != nullptr, "TS_VARIANT: unknown variant '{}' (names look like mm/cpu/ref; ts_ladder --list prints them)",
             name);
    parsed.push_back(v);
  }
  env_overrides = std::move(parsed);
}

// TS_VARIANT named a variant of this op for another device: the call cannot use it.
// Said once per variant (a loop would repeat it), never silently ignored.
void warn_other_device(const Variant& v, const OpCall& call) {
  static std::mutex mutex;
  static std::set<const Variant*> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(&v).second) return;
  fmt::print(stderr, "tensorscope: warning: TS_VARIANT names {}, but {} ran on {}: that variant runs on {} only\n",
             v.name, call.op.name, call.device.str(), variant_device_name(v.device));
}

// A variant asked for by name must run, or say why not.
const Variant& forced(const Variant& v, const OpCall& call, const char* source) {
  std::string why;
  TS_CHECK(v.accepts(call, &why), "{}: variant {} (chosen by {}) cannot run this call: {}", call.op.name, v.name,
           source, why);
  return v;
}

}  // namespace

void reload_variant_environment() { parse_variant_environment(); }

const Variant& select_variant(const OpCall& call) {
  static const bool env_parsed = (parse_variant_environment(), true);  // once, at the first dispatch
  (void)env_parsed;
  for (auto it = scoped_overrides.rbegin(); it != scoped_overrides.rend(); ++it) {  // innermost first
    VariantOverride& o = **it;
    if (!applies(*o.variant_, call)) continue;
    if (o.mode_ == VariantOverride::Mode::prefer && !o.variant_->accepts(call, nullptr))
      continue;  // preferred, not forced: the next choice takes the call
    ++o.calls_;
    return forced(*o.variant_, call, "VariantOverride");
  }
  if (!env_overrides.empty()) {
    const Variant* for_another_device = nullptr;
    for (auto it = env_overrides.rbegin(); it != env_overrides.rend(); ++it) {
      if (applies(**it, call)) return forced(**it, call, "TS_VARIANT");
      if ((*it)->op == &call.op) for_another_device = *it;
    }
    if (for_another_device != nullptr) warn_other_device(*for_another_device, call);
  }

  // The highest rung that runs on the call's device and accepts the call (its GPU has what the
  // rung needs, and its supports() says yes).
  const std::span<const Variant> rungs = call.op.rungs;
  for (auto v = rungs.rbegin(); v != rungs.rend(); ++v)
    if (v->runs_on(call.device.type) && v->accepts(call, nullptr)) return *v;

  // Nothing can run: say what each candidate objected to.
  std::string reasons;
  bool any_candidate = false;
  for (auto v = rungs.rbegin(); v != rungs.rend(); ++v) {
    if (!v->runs_on(call.device.type)) continue;
    any_candidate = true;
    std::string why;
    v->accepts(call, &why);
    reasons += fmt::format("\n  {}: {}", v->name, why);
  }
  fail("{}: no variant runs on {} for these inputs{}", call.op.name, call.device.str(),
       any_candidate ? reasons : std::string(" (none is registered for this device)"));
}

Tensor dispatch(OpCall& call) {
  profiler::OpScope scope(call);
  call.op.prepare(call);
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

VariantOverride::VariantOverride(std::string_view variant_name, Mode mode)
    : variant_(find_variant(variant_name)), mode_(mode) {
  TS_CHECK(variant_ != nullptr, "VariantOverride: unknown variant '{}'", variant_name);
  scoped_overrides.push_back(this);
}

VariantOverride::~VariantOverride() { scoped_overrides.pop_back(); }

}  // namespace ts
