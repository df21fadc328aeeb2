// ops/registry.h: the kernel ladder: every op, and through it every rung (ops/registry.cpp).
//
// A variant is named op/device/variant ("mm/cpu/openblas"). Its rung orders
// the ladder: 0 is the reference oracle, higher rungs are faster. Device
// "any" marks variants that launch nothing themselves: views (metadata only)
// and composites that call other ops.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "ops/op.h"

namespace ts {

// Every op, in the registry's order.
std::span<const OpDef* const> all_ops();
// Every variant of every op, in ladder order (op by op, rung by rung).
std::span<const Variant* const> all_variants();
// The variant with this exact name, or nullptr.
const Variant* find_variant(std::string_view name);
// The rung of op `op` ("scaled_dot_product_attention" or "ts::scaled_dot_product_attention") whose
// name ends in `rung` ("flash_v1": the part after the device), or nullptr. Callers that choose a
// rung by its short name (nn's attention paths) spell no full variant name.
const Variant* find_rung(std::string_view op, std::string_view rung);
// Why find_rung(op, rung) found nothing: no such op, no such rung, or (a build without the CUDA
// toolkit, which registers no CUDA rung) not in this build.
std::string no_rung_reason(std::string_view op, std::string_view rung);
// The op with this name ("add" or "ts::add"), or nullptr.
const OpDef* find_op(std::string_view name);

// Whether `device` has what the rung named `variant` needs of a GPU (gpu_meets on its rung row);
// false, with the reason, when it lacks it or when this build has no such rung (a build without
// the CUDA toolkit has no CUDA rung). What callers that force a rung by name ask first.
bool gpu_meets_rung(std::string_view variant, Device device, std::string* why);

// Device part of a variant name: "cpu", "cuda", "any".
const char* variant_device_name(VariantDevice device);

}  // namespace ts
