// ops/registry.h: the kernel ladder, one entry per variant, in one table (ops/registry.cpp).
//
// A variant is named op/device/variant ("mm/cpu/openblas"). Its rung orders
// the ladder: 0 is the reference oracle, higher rungs are faster. Device
// "any" marks variants that launch nothing themselves: views (metadata only)
// and composites that call other ops.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "ops/op_call.h"

namespace ts {

enum class VariantDevice : uint8_t { cpu, cuda, any };

struct Cost {
  double flops = 0;  // floating-point operations (a multiply-add counts 2)
  double bytes = 0;  // fewest bytes the op must move: inputs read once, outputs written once
};

struct Variant {
  const char* name;      // "mm/cpu/openblas"
  OpId op;
  VariantDevice device;
  int rung;              // ladder order: 0 = reference
  const char* summary;   // one line: what this rung does, what changed from the one below
  // nullptr when the variant runs any call its op accepts; otherwise returns
  // false (and, when why is not null, the reason) for calls it cannot run.
  bool (*supports)(const OpCall& call, std::string* why);
  void (*run)(OpCall& call);
  Cost (*cost)(const OpCall& call);  // nullptr: no arithmetic to speak of (views)

  bool runs_on(DeviceType type) const {
    return device == VariantDevice::any || static_cast<int>(device) == static_cast<int>(type);
  }
};

// Every registered variant, in ladder order (op by op, rung by rung).
std::span<const Variant> all_variants();
// The variant with this exact name, or nullptr.
const Variant* find_variant(std::string_view name);
// Variants that can run op on a device type, highest rung first.
std::span<const Variant* const> variants_for(OpId op, DeviceType device);

// Device part of a variant name: "cpu", "cuda", "any".
const char* variant_device_name(VariantDevice device);

}  // namespace ts
