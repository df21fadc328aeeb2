// tests/test_registry.cpp: the variant table and the selection rules of ops/dispatch.cpp:
// scoped override, then TS_VARIANT, then the highest rung that supports the call.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/matmul/matmul.h"
#include "ops/registry.h"
#include "tensor/cuda_device.h"
#include "ops/views/views.h"

using ts::DeviceType;
using ts::OpCall;
using ts::Tensor;
using ts::Variant;

namespace {

// An mm call prepared as ts::mm would prepare it: inputs set, on the cpu.
struct MmCall {
  Tensor a = ts::ones({2, 3}), b = ts::ones({3, 4});
  ts::NoAttrs attrs;
  OpCall call{ts::ops::mm, attrs, ts::Where::current(), {&a, &b}};
  MmCall() { ts::ops::mm.prepare(call); }
  std::string_view selected() const { return ts::select_variant(call).name; }
};

// Sets TS_VARIANT for the life of the object and re-reads it; restores the unset state after.
struct ScopedEnv {
  explicit ScopedEnv(const char* value) {
    setenv("TS_VARIANT", value, 1);
    try {
      ts::reload_variant_environment();
    } catch (...) {  // a name it refuses: no destructor will run, so the variable goes now
      unsetenv("TS_VARIANT");
      ts::reload_variant_environment();
      throw;
    }
  }
  ~ScopedEnv() {
    unsetenv("TS_VARIANT");
    ts::reload_variant_environment();
  }
};

}  // namespace

TEST_CASE("registry: names are unique and read op/device/variant") {
  std::set<std::string> names;
  for (const Variant* v : ts::all_variants()) {
    const std::string name = v->name;
    CAPTURE(name);
    CHECK(names.insert(name).second);
    const size_t first = name.find('/'), second = name.find('/', first + 1);
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    CHECK(name.find('/', second + 1) == std::string::npos);
    REQUIRE(v->op != nullptr);
    CHECK(name.substr(0, first) == v->op->short_name());
    CHECK(name.substr(first + 1, second - first - 1) == ts::variant_device_name(v->device));
    CHECK(second + 1 < name.size());
    CHECK((v->run != nullptr));
    CHECK(v->summary != nullptr);
    CHECK(std::string(v->summary).size() > 0);
    CHECK(v->rung >= 0);
    CHECK(ts::find_variant(name) == v);
  }
  CHECK(ts::find_variant("mm/cpu/nope") == nullptr);
  CHECK(ts::find_variant("mm") == nullptr);
}

TEST_CASE("registry: every CUDA rung says the compute capability it needs, and no other rung needs a GPU") {
  int above_oldest = 0;
  for (const Variant* v : ts::all_variants()) {
    CAPTURE(std::string(v->name));
    if (v->device == ts::VariantDevice::cuda) {
      CHECK_FALSE(v->needs.any_gpu());
      // 7.5 (Turing) is the oldest: no rung may need less, and what needs more says what for.
      CHECK(v->needs.major * 10 + v->needs.minor >= 75);
      if (v->needs.above_oldest()) {
        ++above_oldest;
        CHECK(std::string(v->needs.what).size() > 0);
      }
    } else {
      CHECK(v->needs.any_gpu());
      CHECK(ts::gpu_needs_name(v->needs) == "-");
    }
  }
  CHECK(ts::gpu_needs_name(ts::sm75) == "7.5");
  CHECK(ts::gpu_needs_name(ts::sm80) == "8.0");
  CHECK(ts::gpu_needs_name(ts::sm90a) == "9.0a");
  if (ts::cuda::built_with_cuda()) {
    // The tensor-core rungs: mma.sync and flash_v2 need Ampere, wgmma and flash_v3 Hopper alone.
    for (const char* name : {"mm/cuda/mma", "bmm/cuda/mma", "addmm/cuda/mma", "scaled_dot_product_attention/cuda/flash_v2"})
      CHECK_MESSAGE(ts::gpu_needs_name(ts::find_variant(name)->needs) == "8.0", name);
    for (const char* name : {"mm/cuda/wgmma", "bmm/cuda/wgmma", "addmm/cuda/wgmma", "linear_geglu/cuda/wgmma",
                             "scaled_dot_product_attention/cuda/flash_v3"})
      CHECK_MESSAGE(ts::gpu_needs_name(ts::find_variant(name)->needs) == "9.0a", name);
    CHECK(above_oldest == 9);
  } else {
    CHECK(above_oldest == 0);  // a CPU-only build registers no CUDA rung
  }
  // On the CPU every rung's GPU needs are met: there is no GPU to lack anything.
  std::string why;
  CHECK(ts::gpu_meets(ts::sm90a, ts::kCPU, &why));
  CHECK(why.empty());
}

TEST_CASE("registry: a rung asked for by a name this build lacks says why") {
  std::string why;
  if (ts::cuda::built_with_cuda()) {
    CHECK(ts::find_variant("mm/cuda/cublas") != nullptr);
  } else {
    CHECK_FALSE(ts::gpu_meets_rung("mm/cuda/cublas", ts::kCUDA, &why));
    CHECK(why.find("not in this build") != std::string::npos);
    CHECK(why.find("no CUDA backend") != std::string::npos);
  }
  CHECK_FALSE(ts::gpu_meets_rung("mm/cpu/nope", ts::kCUDA, &why));
  CHECK(why.find("no rung is named mm/cpu/nope") != std::string::npos);
}

TEST_CASE("registry: every op names itself, lists its rungs in ladder order from a reference, runs on the cpu") {
  std::set<std::string> op_names;
  size_t rungs = 0;
  for (const ts::OpDef* op : ts::all_ops()) {
    const std::string name = op->name;
    INFO("op ", name);
    CHECK(name.starts_with("ts::"));
    CHECK(op_names.insert(name).second);
    CHECK(ts::find_op(name) == op);
    CHECK(ts::find_op(op->short_name()) == op);
    CHECK((op->prepare != nullptr));
    CHECK(op->attrs != nullptr);
    REQUIRE(!op->rungs.empty());
    CHECK(op->rungs[0].rung == 0);  // the reference first
    bool on_cpu = false;
    for (size_t k = 0; k < op->rungs.size(); ++k) {
      const Variant& v = op->rungs[k];
      CHECK(v.op == op);
      if (k > 0) CHECK(op->rungs[k - 1].rung < v.rung);  // strictly ascending: the order of the automatic choice
      on_cpu |= v.runs_on(DeviceType::cpu);
    }
    CHECK(on_cpu);
    rungs += op->rungs.size();
  }
  // all_variants() is exactly the ops' rungs, in the same order.
  CHECK(rungs == ts::all_variants().size());
  CHECK(ts::find_op("nope") == nullptr);
}

TEST_CASE("registry: the default is the highest rung that runs on the device and supports the call") {
  ts::reload_variant_environment();
  MmCall mm;
  // The expected choice, found by the rule itself over the op's ladder.
  const Variant* expected = nullptr;
  for (auto v = ts::ops::mm.rungs.rbegin(); v != ts::ops::mm.rungs.rend() && expected == nullptr; ++v)
    if (v->runs_on(DeviceType::cpu) && (v->supports == nullptr || v->supports(mm.call, nullptr))) expected = &*v;
  REQUIRE(expected != nullptr);
  CHECK(mm.selected() == expected->name);
  CHECK(mm.selected() == "mm/cpu/openblas");  // today's top rung on the host
}

TEST_CASE("registry: an op's attributes must be its own struct") {
  const ts::NoAttrs none;
  CHECK_THROWS_WITH_AS(ts::OpCall(ts::ops::narrow, none, ts::Where::current()), doctest::Contains("ts::narrow"),
                       ts::Error);
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
  for (const Variant& v : ts::ops::mm.rungs) {
    if (!v.runs_on(DeviceType::cpu)) continue;
    ts::VariantOverride use(v.name);
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

TEST_CASE("registry: TS_VARIANT may name variants of one op for several devices, and each applies to its own") {
  (void)ts::zeros({1});
  MmCall mm;
#if !TS_HAVE_CUDA
  // A CPU-only build registers no CUDA rung: a name of one is unknown here, and says so.
  CHECK_THROWS_WITH_AS(ScopedEnv("mm/cuda/tiled,mm/cpu/ref"), doctest::Contains("unknown variant 'mm/cuda/tiled'"),
                       ts::Error);
  CHECK(getenv("TS_VARIANT") == nullptr);
  CHECK(mm.selected() == "mm/cpu/openblas");
  return;
#endif
  {
    ScopedEnv env("mm/cuda/tiled,mm/cpu/ref");  // the cpu call takes mm/cpu/ref, whatever the order
    CHECK(mm.selected() == "mm/cpu/ref");
  }
  {
    ScopedEnv env("mm/cpu/ref,mm/cuda/tiled");
    CHECK(mm.selected() == "mm/cpu/ref");
  }
  {
    ScopedEnv env("mm/cuda/tiled");  // nothing for the cpu: the default rung (and a warning on stderr, once)
    CHECK(mm.selected() == "mm/cpu/openblas");
    CHECK(ts::mm(mm.a, mm.b).to_vector<float>() == std::vector<float>(8, 3.0f));
  }
}
