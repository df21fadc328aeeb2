// tests/test_registry.cpp: the variant table and the selection rules of ops/dispatch.cpp:
// scoped override, then TS_VARIANT, then the highest rung that supports the call.
#include <doctest/doctest.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "ops/attention/attention.h"
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

// A test-only op outside the registry, forced through VariantOverride(const Variant&): its one
// faster rung counts how often dispatch asks its supports(), and refuses a tensor of 3 elements.
int counted_supports_calls = 0;
bool counted_supports(const OpCall& call, std::string* why) {
  ++counted_supports_calls;
  if (call.input(0).numel() != 3) return true;
  if (why) *why = "counted: refuses 3 elements";
  return false;
}
void counted_prepare(OpCall& call) { call.device = call.input(0).device(); }
void counted_identity(OpCall& call) { call.out = call.input(0); }

}  // namespace

extern const ts::OpDef counted_op;
const Variant counted_rungs[] = {
    {"counted/cpu/ref", &counted_op, ts::VariantDevice::cpu, 0, ts::no_gpu, "the identity", nullptr,
     counted_identity, "tests/test_registry.cpp"},
    {"counted/cpu/counted", &counted_op, ts::VariantDevice::cpu, 1, ts::no_gpu, "the identity, counted",
     counted_supports, counted_identity, "tests/test_registry.cpp"},
};
const ts::OpDef counted_op{.name = "ts::counted",
                           .attrs = ts::attrs_tag<ts::NoAttrs>,
                           .prepare = counted_prepare,
                           .rungs = counted_rungs};

namespace {

// One call of the counted op on x through dispatch; the rung that ran it.
std::string_view run_counted(const Tensor& x) {
  const ts::NoAttrs attrs;
  OpCall call(counted_op, attrs, ts::Where::current(), {&x});
  (void)ts::dispatch(call);
  return call.variant->name;
}

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

TEST_CASE("registry: a forced rung for another device throws with the rung's reason, prefer falls through") {
  ts::reload_variant_environment();
  if (!ts::cuda::built_with_cuda()) {
    MESSAGE("skipped: no CUDA rung in this build: ", ts::cuda::unavailable_reason());
    return;
  }
  const Tensor a = ts::ones({2, 3}), b = ts::ones({3, 4});
  {
    ts::VariantOverride use("mm/cuda/cublas");
    // Names the op, the variant, both devices; never the quiet choice of the best cpu rung.
    CHECK_THROWS_WITH_AS(ts::mm(a, b),
                         doctest::Contains("ts::mm: variant mm/cuda/cublas (chosen by VariantOverride) runs on cuda, "
                                           "this call on cpu"),
                         ts::Error);
    CHECK(use.calls() == 1);
    // Other ops in its scope choose as usual: mm's override is no business of add's.
    CHECK(ts::add(a, a).to_vector<float>() == std::vector<float>(6, 2.0f));
  }
  {
    // The rung's own words come first where it has them: the fused attention rungs say where q is.
    const Tensor q = ts::ones({1, 2, 9, 64}, ts::DType::bf16);
    ts::VariantOverride use("scaled_dot_product_attention", "flash_v1");
    CHECK(std::string(use.variant().name) == "scaled_dot_product_attention/cuda/flash_v1");
    CHECK_THROWS_WITH_AS(ts::scaled_dot_product_attention(q, q, q, {}, true),
                         doctest::Contains("runs on cuda, this call on cpu: sdpa flash_v1: runs on cuda, q is on cpu"),
                         ts::Error);
    CHECK(use.refusal([&] { ts::scaled_dot_product_attention(q, q, q, {}, true); }) ==
          "sdpa flash_v1: runs on cuda, q is on cpu");
    // The ops a caller issues around the forced op run as usual (here on the cpu).
    CHECK(ts::matmul(a, b).shape() == ts::Dims{2, 4});
  }
  {
    // A composite's rung (device any) runs everywhere; the ops it issues are not forced by it.
    const Tensor q = ts::ones({1, 2, 5, 8});
    ts::VariantOverride use("scaled_dot_product_attention/any/math");
    CHECK(ts::scaled_dot_product_attention(q, q, q, {}, true).shape() == q.shape());
    CHECK(use.calls() == 1);
    CHECK(use.refusal([&] { ts::scaled_dot_product_attention(q, q, q, {}, true); }).empty());
  }
  {
    // Prefer: the cpu call goes on to the best cpu rung, and the override ran nothing.
    ts::VariantOverride use("mm/cuda/cublas", ts::VariantOverride::Mode::prefer);
    MmCall mm;
    CHECK(mm.selected() == "mm/cpu/openblas");
    CHECK(ts::mm(a, b).to_vector<float>() == std::vector<float>(8, 3.0f));
    CHECK(use.calls() == 0);
  }
  // A rung looked up by op and short name, and the reason when there is none.
  CHECK(ts::find_rung("mm", "cublas") == ts::find_variant("mm/cuda/cublas"));
  CHECK(ts::find_rung("ts::mm", "ref") == ts::find_variant("mm/cpu/ref"));
  CHECK(ts::find_rung("mm", "nope") == nullptr);
  CHECK_THROWS_WITH_AS(ts::VariantOverride("mm", "nope"), doctest::Contains("VariantOverride: mm has no rung nope"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::VariantOverride("nope", "ref"), doctest::Contains("no op is named nope"), ts::Error);
}

TEST_CASE("cuda: registry: a cpu rung forced on a cuda call throws with the reason, TS_VARIANT warns instead") {
  if (!ts::cuda::is_available()) {
    MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
    return;
  }
  ts::reload_variant_environment();
  const Tensor a = ts::ones({2, 3}, ts::kCUDA), b = ts::ones({3, 4}, ts::kCUDA);
  {
    ts::VariantOverride use("mm/cpu/ref");
    CHECK_THROWS_WITH_AS(ts::mm(a, b),
                         doctest::Contains("ts::mm: variant mm/cpu/ref (chosen by VariantOverride) runs on cpu, "
                                           "this call on cuda:0"),
                         ts::Error);
    CHECK(ts::add(a, a).to(ts::kCPU).to_vector<float>() == std::vector<float>(6, 2.0f));  // add is not forced
  }
  {
    ts::VariantOverride use("mm/cpu/ref", ts::VariantOverride::Mode::prefer);
    CHECK(ts::mm(a, b).to(ts::kCPU).to_vector<float>() == std::vector<float>(8, 3.0f));
    CHECK(use.calls() == 0);
  }
  {
    ScopedEnv env("mm/cpu/ref");  // process-wide, for one device: the cuda call takes its best rung
    CHECK(ts::mm(a, b).to(ts::kCPU).to_vector<float>() == std::vector<float>(8, 3.0f));
  }
}

TEST_CASE("registry: a forced rung's supports() runs once per call, forced or preferred") {
  ts::reload_variant_environment();
  const Tensor ok = ts::ones({4}), refused = ts::ones({3});
  const Variant& counted = counted_rungs[1];
  counted_supports_calls = 0;
  CHECK(run_counted(ok) == "counted/cpu/counted");  // the automatic choice asks it once
  CHECK(counted_supports_calls == 1);
  {
    ts::VariantOverride use(counted);
    counted_supports_calls = 0;
    CHECK(run_counted(ok) == "counted/cpu/counted");
    CHECK(counted_supports_calls == 1);
    counted_supports_calls = 0;
    CHECK_THROWS_WITH_AS(run_counted(refused),
                         "ts::counted: variant counted/cpu/counted (chosen by VariantOverride) cannot run this call: "
                         "counted: refuses 3 elements",
                         ts::Error);
    CHECK(counted_supports_calls == 1);
    counted_supports_calls = 0;
    CHECK(use.refusal([&] { run_counted(refused); }) == "counted: refuses 3 elements");  // asked, not run
    CHECK(counted_supports_calls == 1);
  }
  {
    ts::VariantOverride use(counted, ts::VariantOverride::Mode::prefer);
    counted_supports_calls = 0;
    CHECK(run_counted(ok) == "counted/cpu/counted");
    CHECK(counted_supports_calls == 1);
    counted_supports_calls = 0;
    CHECK(run_counted(refused) == "counted/cpu/ref");  // refused: the next choice, the reference
    CHECK(counted_supports_calls == 2);  // once as preferred, once by the automatic choice that follows
    CHECK(use.calls() == 1);
  }
}

#ifdef TS_SOURCE_DIR
TEST_CASE("registry: every rung names the file of its code, in its op's folder, and the file names its entry point") {
  std::map<const ts::OpDef*, std::string> folder_of;  // every rung of an op lives in one folder
  for (const Variant* v : ts::all_variants()) {
    const std::string name = v->name;
    CAPTURE(name);
    REQUIRE(v->source != nullptr);
    const std::filesystem::path source = v->source;
    CAPTURE(source.string());
    std::ifstream in(std::filesystem::path(TS_SOURCE_DIR) / source);
    REQUIRE_MESSAGE(in.good(), "no such file in the tree");
    // ops/<folder>/<file>: the op's folder, never ops/ itself or deeper.
    const std::filesystem::path folder = source.parent_path();
    CHECK(folder.parent_path() == "ops");
    const auto [it, first] = folder_of.emplace(v->op, folder.string());
    CHECK(it->second == folder.string());
    // The entry point: <op>_<device>_<rung> (add_cuda_vec16, masked_fill__cuda_rows, safe_softmax_cuda_warp,
    // sdpa_flash_v1, PyTorch's abbreviation), or <op>_<rung> for device any (t_view, clone_composite).
    std::stringstream text;
    text << in.rdbuf();
    const std::string op = v->op->short_name();
    const std::string rung = name.substr(name.rfind('/') + 1), device = ts::variant_device_name(v->device);
    std::string bare = op;
    while (!bare.empty() && bare.front() == '_') bare.erase(0, 1);
    while (!bare.empty() && bare.back() == '_') bare.pop_back();
    std::vector<std::string> entry_points;
    for (const std::string& prefix : {op, bare, std::string(op == "scaled_dot_product_attention" ? "sdpa" : "")}) {
      if (prefix.empty()) continue;
      entry_points.push_back(prefix + "_" + device + "_" + rung);
      entry_points.push_back(prefix + "_" + rung);
    }
    // A function whose name starts with one of them (sdpa_math_composite) is defined or declared there.
    const std::string code = text.str();
    auto defines = [&code](const std::string& prefix) {
      for (size_t at = code.find(prefix); at != std::string::npos; at = code.find(prefix, at + 1)) {
        if (at > 0 && (std::isalnum(static_cast<unsigned char>(code[at - 1])) || code[at - 1] == '_')) continue;
        size_t end = at + prefix.size();
        while (end < code.size() && (std::isalnum(static_cast<unsigned char>(code[end])) || code[end] == '_')) ++end;
        if (end < code.size() && code[end] == '(') return true;
      }
      return false;
    };
    bool named = false;
    for (const std::string& e : entry_points) named |= defines(e);
    CHECK_MESSAGE(named, "the file defines none of ", fmt::format("{}", fmt::join(entry_points, ", ")));
  }
}
#endif
