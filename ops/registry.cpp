// ops/registry.cpp: THE list of every op; through each, its ladder of variants.
//
// Read top to bottom, this is the syllabus: each op's folder defines its OpDef
// with its rungs, the reference oracle first (rung 0), then each faster rung
// with what it changes (`ts_ladder --list` prints them all). Tests, benchmarks,
// the ladder runner and the tutorials enumerate this list; nothing else lists
// ops or variants. Selection rules live in ops/dispatch.cpp.
#include "ops/registry.h"

#include <vector>

#include "ops/attention/attention.h"
#include "ops/copy/copy.h"
#include "ops/elementwise/elementwise.h"
#include "ops/factories/factories.h"
#include "ops/geglu/geglu.h"
#include "ops/masking/masking.h"
#include "ops/matmul/matmul.h"
#include "ops/reduce/reduce.h"
#include "ops/softmax/softmax.h"
#include "ops/views/views.h"
#include "tensor/cuda_device.h"

namespace ts {

namespace {

const OpDef* const kOps[] = {
    // factories and copies
    &ops::empty, &ops::fill_, &ops::copy_, &ops::clone, &ops::contiguous, &ops::to, &ops::arange, &ops::rand,
    &ops::randn,
    // views: metadata only, never a kernel
    &ops::t, &ops::transpose, &ops::permute, &ops::view, &ops::reshape, &ops::unsqueeze, &ops::squeeze,
    &ops::expand, &ops::narrow, &ops::slice, &ops::select, &ops::as_strided,
    // elementwise
    &ops::add, &ops::sub, &ops::mul, &ops::div, &ops::neg, &ops::exp, &ops::tanh, &ops::gelu, &ops::relu,
    // softmax, masking, selection
    &ops::softmax, &ops::_safe_softmax, &ops::masked_fill, &ops::masked_fill_, &ops::where, &ops::triu, &ops::tril,
    // reductions
    &ops::sum, &ops::max,
    // matrix products
    &ops::mm, &ops::bmm, &ops::matmul, &ops::addmm, &ops::linear, &ops::linear_geglu,
    // fused elementwise
    &ops::geglu,
    // attention
    &ops::scaled_dot_product_attention,
};

std::vector<const Variant*> collect_variants() {
  std::vector<const Variant*> all;
  for (const OpDef* op : kOps)
    for (const Variant& v : op->rungs) all.push_back(&v);
  return all;
}

}  // namespace

std::span<const OpDef* const> all_ops() { return kOps; }

std::span<const Variant* const> all_variants() {
  static const std::vector<const Variant*> all = collect_variants();
  return all;
}

const Variant* find_variant(std::string_view name) {
  for (const Variant* v : all_variants())
    if (name == v->name) return v;
  return nullptr;
}

const Variant* find_rung(std::string_view op, std::string_view rung) {
  const OpDef* def = find_op(op);
  if (def == nullptr) return nullptr;
  for (const Variant& v : def->rungs) {
    const std::string_view name = v.name;
    if (name.substr(name.rfind('/') + 1) == rung) return &v;
  }
  return nullptr;
}

std::string no_rung_reason(std::string_view op, std::string_view rung) {
  const OpDef* def = find_op(op);
  if (def == nullptr) return fmt::format("no op is named {} (ts_ladder --list prints them)", op);
  if (!cuda::built_with_cuda())
    return fmt::format("{} has no rung {} in this build: {}", def->short_name(), rung, cuda::unavailable_reason());
  return fmt::format("{} has no rung {} (ts_ladder --list prints them)", def->short_name(), rung);
}

bool gpu_meets_rung(std::string_view variant, Device device, std::string* why) {
  const Variant* v = find_variant(variant);
  if (v == nullptr) {
    if (why)
      *why = cuda::built_with_cuda() || variant.find("/cuda/") == std::string_view::npos
                 ? fmt::format("no rung is named {} (ts_ladder --list prints them)", variant)
                 : fmt::format("{} is not in this build: {}", variant, cuda::unavailable_reason());
    return false;
  }
  return gpu_meets(v->needs, device, why);
}

const OpDef* find_op(std::string_view name) {
  for (const OpDef* op : kOps)
    if (name == op->name || name == op->short_name()) return op;
  return nullptr;
}

const char* variant_device_name(VariantDevice device) {
  switch (device) {
    case VariantDevice::cpu: return "cpu";
    case VariantDevice::cuda: return "cuda";
    case VariantDevice::any: return "any";
  }
  return "?";
}

}  // namespace ts
