// ops/dispatch.cpp: the one choke point: profiler scope, checks, variant choice, the call.
#include "ops/dispatch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "profiler/op_scope.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"

namespace ts {

// Forced variants. Both lists are empty unless something forces a variant, so
// the common path pays one emptiness check each. A scoped override is searched
// innermost first; a variant for device "any" applies to every device.

// The scoped overrides of one thread, innermost last. Each override holds the stack it was pushed
// on (a shared_ptr: the stack outlives its thread while an override on it lives) and erases itself
// from it, from whichever thread destroys it, so overrides destroyed out of order or elsewhere leave
// the others as they were.
struct detail::OverrideStack {
  std::recursive_mutex mutex;  // recursive: a forced rung's checks may dispatch again on this thread
  std::vector<VariantOverride*> overrides;
  std::atomic<size_t> size{0};  // read without the lock on the common path, where it is 0
};

namespace {

// This thread's stack: null until its first override (a constant-initialized thread_local, so
// dispatch reads it without an initialization check).
thread_local std::shared_ptr<detail::OverrideStack> this_thread_overrides;

// TS_VARIANT, process-wide: null or a list, replaced whole by reload_variant_environment(). A list once
// installed is never freed, so that a thread dispatching while another reloads reads the old list or
// the new one, never a list being freed; reloads are rare (tests and tools), and each keeps a few
// pointers.
std::atomic<const std::vector<const Variant*>*> env_overrides{nullptr};

// What a VariantOverride being asked (VariantOverride::refusal) wants to hear, per thread: the first
// call of its variant's op is prepared, answered here and never run.
struct Asking {
  const Variant* variant = nullptr;
  std::string why;
};
thread_local Asking* asking = nullptr;
struct Asked {};  // thrown from dispatch to refusal() once the call is answered; never escapes

// TS_VARIANT applies a variant to calls of its op on its device (a variant for device "any", on every device).
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
  static std::mutex mutex;  // two threads reloading at once install one list after the other
  // Every list installed, kept to the end of the process (never destroyed, so not at exit either).
  static auto* installed = new std::vector<std::unique_ptr<const std::vector<const Variant*>>>();
  std::lock_guard lock(mutex);
  if (parsed.empty() && installed->empty()) return;
  installed->push_back(std::make_unique<const std::vector<const Variant*>>(std::move(parsed)));
  env_overrides.store(installed->back().get(), std::memory_order_release);
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

// Why `v` cannot run the call, in the rung's own words where it has them; "" when it can. A rung for
// another device than the call's cannot run it, whatever its supports() says; its supports() still
// speaks first (it reads metadata only, so it answers for a call on any device: the fused attention
// rungs say "runs on cuda, q is on cpu"). One evaluation of accepts(), so one of supports().
std::string refusal_of(const Variant& v, const OpCall& call) {
  std::string why;
  const bool accepted = v.accepts(call, &why);
  if (v.runs_on(call.device.type)) return accepted ? std::string() : why;
  return accepted ? fmt::format("{} runs on {} only", v.name, variant_device_name(v.device)) : why;
}

// A variant asked for by name must run, or say why not: never a quiet fallback.
const Variant& forced(const Variant& v, const OpCall& call, const char* source) {
  const std::string why = refusal_of(v, call);
  if (why.empty()) return v;
  if (!v.runs_on(call.device.type))
    fail("{}: variant {} (chosen by {}) runs on {}, this call on {}: {}", call.op.name, v.name, source,
         variant_device_name(v.device), call.device.str(), why);
  fail("{}: variant {} (chosen by {}) cannot run this call: {}", call.op.name, v.name, source, why);
}

}  // namespace

void reload_variant_environment() { parse_variant_environment(); }

const Variant& select_variant(const OpCall& call) {
  static const bool env_parsed = (parse_variant_environment(), true);  // once, at the first dispatch
  (void)env_parsed;
  if (detail::OverrideStack* scoped = this_thread_overrides.get();
      scoped != nullptr && scoped->size.load(std::memory_order_relaxed) != 0) {
    std::lock_guard lock(scoped->mutex);  // another thread may be destroying one of them
    for (auto it = scoped->overrides.rbegin(); it != scoped->overrides.rend(); ++it) {  // innermost first
      VariantOverride& o = **it;
      const Variant& v = *o.variant_;
      if (v.op != &call.op) continue;  // an override forces calls of its own op only, never the ops inside it
      if (o.mode_ == VariantOverride::Mode::prefer) {
        // Preferred, not forced: a call the variant cannot run (another device, inputs it refuses)
        // goes to the next choice.
        if (!v.runs_on(call.device.type) || !v.accepts(call, nullptr)) continue;
        ++o.calls_;
        return v;
      }
      ++o.calls_;
      return forced(v, call, "VariantOverride");  // forced: on every device; a call it cannot run throws
    }
  }
  if (const auto* env = env_overrides.load(std::memory_order_acquire); env != nullptr && !env->empty()) {
    const Variant* for_another_device = nullptr;
    for (auto it = env->rbegin(); it != env->rend(); ++it) {
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

namespace {

// A call that VariantOverride::refusal asks about: checked by its prepare, answered, never run,
// outside any profiler scope (nothing ran, nothing is recorded).
[[noreturn]] void answer(OpCall& call) {
  call.op.prepare(call);
  asking->why = refusal_of(*asking->variant, call);
  throw Asked{};
}

}  // namespace

Tensor dispatch(OpCall& call) {
  if (asking != nullptr && asking->variant->op == &call.op) [[unlikely]] answer(call);
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
  push();
}

VariantOverride::VariantOverride(std::string_view op, std::string_view rung, Mode mode)
    : variant_(find_rung(op, rung)), mode_(mode) {
  TS_CHECK(variant_ != nullptr, "VariantOverride: {}", no_rung_reason(op, rung));
  push();
}

VariantOverride::VariantOverride(const Variant& variant, Mode mode) : variant_(&variant), mode_(mode) { push(); }

void VariantOverride::push() {
  if (this_thread_overrides == nullptr) this_thread_overrides = std::make_shared<detail::OverrideStack>();
  stack_ = this_thread_overrides;
  std::lock_guard lock(stack_->mutex);
  stack_->overrides.push_back(this);
  stack_->size.store(stack_->overrides.size(), std::memory_order_relaxed);
}

std::string VariantOverride::refusal(const std::function<void()>& make_call) const {
  TS_CHECK(asking == nullptr, "VariantOverride::refusal: already asking about {}", asking->variant->name);
  Asking question{variant_, {}};
  asking = &question;
  try {
    make_call();
  } catch (const Asked&) {
    asking = nullptr;
    return question.why;
  } catch (...) {
    asking = nullptr;
    throw;
  }
  asking = nullptr;
  fail("VariantOverride::refusal: the call made no {} call to ask {} about", variant_->op->name, variant_->name);
}

VariantOverride::~VariantOverride() {
  std::lock_guard lock(stack_->mutex);
  std::vector<VariantOverride*>& overrides = stack_->overrides;
  overrides.erase(std::find(overrides.begin(), overrides.end(), this));  // most often the last
  stack_->size.store(overrides.size(), std::memory_order_relaxed);
}

}  // namespace ts
