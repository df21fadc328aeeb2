// tests/test_registry.cpp: the variant table and the selection rules of ops/dispatch.cpp:
// scoped override, then TS_VARIANT, then the highest rung that supports the call.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/registry.h"

using ts::DeviceType;
using ts::OpCall;
using ts::OpId;
using ts::Tensor;
using ts::Variant;

namespace {

// An mm call prepared as ts::mm would prepare it: inputs set, on the cpu.
struct MmCall {
  Tensor a = ts::ones({2, 3}), b = ts::ones({3, 4});
  OpCall call{OpId::mm, ts::Where::current()};
  MmCall() {
    call.in = {&a, &b};
    call.num_in = 2;
    call.device = ts::kCPU;
  }
  std::string_view selected() const { return ts::select_variant(call).name; }
};

// Sets TS_VARIANT for the life of the object and re-reads it; restores the unset state after.
struct ScopedEnv {
  explicit ScopedEnv(const char* value) {
    setenv("TS_VARIANT", value, 1);
    ts::reload_variant_environment();
  }
  ~ScopedEnv() {
    unsetenv("TS_VARIANT");
    ts::reload_variant_environment();
  }
};

}  // namespace

TEST_CASE("registry: names are unique and read op/device/variant") {
  std::set<std::string> names;
  for (const Variant& v : ts::all_variants()) {
    const std::string name = v.name;
    CAPTURE(name);
    CHECK(names.insert(name).second);
    const size_t first = name.find('/'), second = name.find('/', first + 1);
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    CHECK(name.find('/', second + 1) == std::string::npos);
    CHECK(name.substr(0, first) == ts::op_short_name(v.op));
    CHECK(name.substr(first + 1, second - first - 1) == ts::variant_device_name(v.device));
    CHECK(second + 1 < name.size());
    CHECK((v.run != nullptr));
    CHECK(v.summary != nullptr);
    CHECK(std::string(v.summary).size() > 0);
    CHECK(v.rung >= 0);
    CHECK(ts::find_variant(name) == &v);
  }
  CHECK(ts::find_variant("mm/cpu/nope") == nullptr);
  CHECK(ts::find_variant("mm") == nullptr);
}

TEST_CASE("registry: every op has a variant on the cpu, listed highest rung first") {
  for (int i = 0; i < ts::kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    INFO("op ", std::string(ts::op_name(op)));
    const auto variants = ts::variants_for(op, DeviceType::cpu);
    CHECK(!variants.empty());
    for (size_t k = 0; k < variants.size(); ++k) {
      CHECK(variants[k]->op == op);
      CHECK(variants[k]->runs_on(DeviceType::cpu));
      if (k > 0) CHECK(variants[k - 1]->rung >= variants[k]->rung);
    }
    // Reference rung present for every op.
    bool has_rung0 = false;
    for (const Variant* v : variants) has_rung0 |= v->rung == 0;
    CHECK(has_rung0);
  }
  // The lists are the table: every cpu-capable entry appears in its op's list, once.
  size_t listed = 0, cpu_capable = 0;
  for (int i = 0; i < ts::kNumOps; ++i) listed += ts::variants_for(static_cast<OpId>(i), DeviceType::cpu).size();
  for (const Variant& v : ts::all_variants()) cpu_capable += v.runs_on(DeviceType::cpu) ? 1 : 0;
  CHECK(listed == cpu_capable);
}

TEST_CASE("registry: the default is the highest rung that supports the call") {
  ts::reload_variant_environment();
  MmCall mm;
  const auto variants = ts::variants_for(OpId::mm, DeviceType::cpu);
  REQUIRE(!variants.empty());
  // The expected choice, found by the rule itself over the registry's list.
  const Variant* expected = nullptr;
  for (const Variant* v : variants)
    if (expected == nullptr && (v->supports == nullptr || v->supports(mm.call, nullptr))) expected = v;
  REQUIRE(expected != nullptr);
  CHECK(mm.selected() == expected->name);
  CHECK(mm.selected() == "mm/cpu/openblas");  // today's top rung on the host

  // Every op's default on the cpu is its top rung when nothing constrains it.
  for (OpId op : {OpId::add, OpId::softmax, OpId::bmm, OpId::addmm, OpId::sum}) {
    OpCall call(op, ts::Where::current());
    call.device = ts::kCPU;
    CHECK(std::string_view(ts::select_variant(call).name) == ts::variants_for(op, DeviceType::cpu)[0]->name);
  }
}

TEST_CASE("registry: a scoped VariantOverride wins, nests, and restores on scope exit") {
  ts::reload_variant_environment();
  MmCall mm;
  CHECK(mm.selected() == "mm/cpu/openblas");
  {
    ts::VariantOverride outer("mm/cpu/ref");
    CHECK(mm.selected() == "mm/cpu/ref");
    {
      ts::VariantOverride inner("mm/cpu/openblas");
      CHECK(mm.selected() == "mm/cpu/openblas");
      {
        ts::VariantOverride innermost("mm/cpu/ref");
        CHECK(mm.selected() == "mm/cpu/ref");
      }
      CHECK(mm.selected() == "mm/cpu/openblas");
    }
    CHECK(mm.selected() == "mm/cpu/ref");
    // An override for another op leaves mm alone.
    ts::VariantOverride other("bmm/cpu/ref");
    CHECK(mm.selected() == "mm/cpu/ref");
  }
  CHECK(mm.selected() == "mm/cpu/openblas");
  // The forced variant is the one that runs: both give the right product.
  const Tensor a = ts::arange(6).view({2, 3}), b = ts::arange(12).view({3, 4});
  for (const Variant* v : ts::variants_for(OpId::mm, DeviceType::cpu)) {
    ts::VariantOverride use(v->name);
    CHECK(ts::mm(a, b).to_vector<float>() == std::vector<float>{20, 23, 26, 29, 56, 68, 80, 92});
  }
}

TEST_CASE("registry: TS_VARIANT applies when no scoped override does") {
  (void)ts::zeros({1});  // the first dispatch has read the (unset) environment
  MmCall mm;
  {
    ScopedEnv env("bmm/cpu/ref,mm/cpu/ref");
    CHECK(mm.selected() == "mm/cpu/ref");
    {
      ts::VariantOverride use("mm/cpu/openblas");  // the scoped override outranks the environment
      CHECK(mm.selected() == "mm/cpu/openblas");
    }
    CHECK(mm.selected() == "mm/cpu/ref");
    CHECK(ts::mm(mm.a, mm.b).to_vector<float>() == std::vector<float>(8, 3.0f));
  }
  CHECK(mm.selected() == "mm/cpu/openblas");
}

TEST_CASE("registry: an unknown name in TS_VARIANT throws and applies none of the list") {
  (void)ts::zeros({1});
  MmCall mm;
  setenv("TS_VARIANT", "mm/cpu/ref,mm/cpu/does_not_exist", 1);
  CHECK_THROWS_WITH_AS(ts::reload_variant_environment(), doctest::Contains("mm/cpu/does_not_exist"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::reload_variant_environment(), doctest::Contains("TS_VARIANT"), ts::Error);
  CHECK(mm.selected() == "mm/cpu/openblas");  // the valid first name was not half-applied
  unsetenv("TS_VARIANT");
  ts::reload_variant_environment();
  CHECK(mm.selected() == "mm/cpu/openblas");
}
