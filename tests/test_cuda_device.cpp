// tests/test_cuda_device.cpp: how the runtime sees a GPU (tensor/cuda_device.h): its compute
// capability, the code of this build it runs, the capability TS_DEVICE_CAPABILITY has the rungs
// chosen for, and what a forced rung says on a GPU that lacks what its rung row needs.
//
// Without a GPU the cases say why they did nothing. make gpu-check runs the suite again under
// TS_DEVICE_CAPABILITY=8.0 and 7.5 on the H200: these cases then check the emulation itself.
// The "device:" cases hold the READMEs' portability quotes to the committed runs they name.
#include <doctest/doctest.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tensor/cuda_device.h"
#include "tests/support/quote_check.h"
#include "tests/support/run_command.h"

#ifndef TS_TUTORIAL_DIR
#error "TS_TUTORIAL_DIR must name the folder of the built tutorials (set in CMakeLists.txt)"
#endif

namespace {

using ts::cuda::ComputeCapability;

bool no_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

// TS_DEVICE_CAPABILITY as this process read it ("" when unset).
std::string emulated_text() {
  const char* env = std::getenv("TS_DEVICE_CAPABILITY");
  return env != nullptr ? env : "";
}

}  // namespace

TEST_CASE("cuda: device target: the GPU's capability, the code it runs, the capability rungs are chosen for") {
  if (no_gpu()) return;
  const ts::cuda::DeviceTarget& t = ts::cuda::target(0);
  const ts::cuda::DeviceProperties p = ts::cuda::device_properties(0);
  MESSAGE("cuda:0 ", t.name, ": compute capability ", ts::cuda::to_string(t.gpu), ", rungs chosen as ",
          ts::cuda::to_string(t.chosen_as), ", code compute_", t.code.major, t.code.minor, " of ",
          std::string(ts::cuda::built_architectures()), std::string(ts::cuda::built_sm90a() ? " (+ sm_90a)" : ""));
  CHECK(t.name == p.name);
  CHECK(t.gpu == ComputeCapability{p.major, p.minor});
  // The driver runs code built for this GPU's generation or an older one, never a newer one.
  CHECK(t.code <= t.gpu);
  CHECK(t.code >= ComputeCapability{7, 5});
  CHECK(std::string(ts::cuda::built_architectures()).size() > 0);
  if (const std::string e = emulated_text(); !e.empty()) {
    CHECK(ts::cuda::to_string(t.chosen_as) == e);
    CHECK(t.emulated() == (t.chosen_as != t.gpu));
  } else {
    CHECK(t.chosen_as == t.gpu);
    CHECK_FALSE(t.emulated());
  }
}

TEST_CASE("cuda: a rung forced by name on a GPU without what it needs throws the reason, and dispatch passes it over") {
  if (no_gpu()) return;
  const ts::cuda::DeviceTarget& t = ts::cuda::target(0);
  const ts::Tensor a = ts::randn({64, 64}, {ts::DType::bf16, ts::kCUDA});
  const ts::Tensor q = ts::randn({1, 2, 64, 64}, {ts::DType::bf16, ts::kCUDA});
  int refused = 0;
  for (const ts::Variant* v : ts::all_variants()) {
    if (v->device != ts::VariantDevice::cuda || !v->needs.above_oldest()) continue;
    std::string why;
    const bool meets = ts::gpu_meets(v->needs, ts::kCUDA, &why);
    const ComputeCapability wanted{v->needs.major, v->needs.minor};
    const ComputeCapability usable = t.chosen_as < t.code ? t.chosen_as : t.code;
    INFO(std::string(v->name), " needs ", ts::gpu_needs_name(v->needs), "; ", why);
    // The rule itself: exactly 9.0 (and sm_90a code) for the exact ones, at least the capability otherwise.
    CHECK(meets == (v->needs.exact ? ts::cuda::built_sm90a() && t.chosen_as == wanted : usable >= wanted));
    if (meets) continue;
    ++refused;
    CHECK(why.find("needs compute capability " + ts::cuda::to_string(wanted)) != std::string::npos);
    if (t.emulated()) CHECK(why.find("TS_DEVICE_CAPABILITY") != std::string::npos);
    const ts::VariantOverride use(v->name);
    const std::string op = v->op->short_name();
    if (op == "mm") CHECK_THROWS_WITH_AS(ts::mm(a, a), doctest::Contains(why.c_str()), ts::Error);
    if (op == "addmm") CHECK_THROWS_WITH_AS(ts::addmm(a, a, a), doctest::Contains(why.c_str()), ts::Error);
    if (op == "bmm")
      CHECK_THROWS_WITH_AS(ts::bmm(a.unsqueeze(0), a.unsqueeze(0)), doctest::Contains(why.c_str()), ts::Error);
    if (op == "linear_geglu")
      CHECK_THROWS_WITH_AS(ts::linear_geglu(a, a), doctest::Contains(why.c_str()), ts::Error);
    if (op == "scaled_dot_product_attention")
      CHECK_THROWS_WITH_AS(ts::scaled_dot_product_attention(q, q, q, {}, true), doctest::Contains(why.c_str()), ts::Error);
  }
  MESSAGE(refused, " rungs refused on this GPU as chosen");
  // Unforced, every op still runs: the highest rung the GPU has takes the call.
  CHECK(ts::mm(a, a).shape() == ts::Dims{64, 64});
  CHECK(ts::scaled_dot_product_attention(q, q, q, {}, true).shape() == q.shape());
}

TEST_CASE("cuda: a TS_DEVICE_CAPABILITY the GPU cannot honour stops the first CUDA op with the reason") {
  if (no_gpu()) return;
  const std::string tutorial = std::string("\"") + TS_TUTORIAL_DIR + "/00_tensors_and_views\" --device cuda";
  const ts::cuda::DeviceTarget& t = ts::cuda::target(0);
  struct Case {
    std::string value, says;
  };
  const Case cases[] = {
      {std::to_string(t.gpu.major + 1) + ".0", "a GPU can be made to choose rungs as an older one would, never as a newer one"},
      {"8", "is not a compute capability: write it as major.minor"},
      {"sm_80", "is not a compute capability"},
      {"7.0", "tensorscope's oldest GPU is compute capability 7.5"}};
  for (const Case& c : cases) {
    INFO("TS_DEVICE_CAPABILITY=", c.value);
    const ts::testing::Run r = ts::testing::run("TS_DEVICE_CAPABILITY=" + c.value + " " + tutorial);
    CHECK(r.status == 1);
    CHECK(r.output.find(c.says) != std::string::npos);
    CHECK(r.output.find("terminate") == std::string::npos);
  }
  // The GPU's own capability is honoured as such.
  const ts::testing::Run same = ts::testing::run("TS_DEVICE_CAPABILITY=" + ts::cuda::to_string(t.gpu) + " " + tutorial);
  CHECK(same.status == 0);
}

// README.md's message for a GPU without code is the one the H200 printed: every line of the excerpt
// under its "<!-- from FILE -->" comment is a line of FILE.
TEST_CASE("device: README.md quotes the no-code message as the committed H200 run printed it") {
  const std::string readme = ts::testing::read_source("README.md");
  const size_t at = readme.find("<!-- from docs/h200-runs/gpu-check/no-code.log -->");
  REQUIRE(at != std::string::npos);
  const size_t open = readme.find("```\n", at), close = readme.find("\n```", open + 4);
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  const ts::testing::QuoteCheck n = ts::testing::check_quotes(
      "README.md", readme.substr(at, close + 4 - at), ts::testing::read_source("docs/h200-runs/gpu-check/no-code.log"));
  CHECK(n.excerpt_lines == 2);
}

// tutorials/README.md ("Your GPU") quotes what the tutorials printed under TS_DEVICE_CAPABILITY on the
// H200: each quoted line is in the committed run of the capability its row names.
TEST_CASE("device: tutorials/README.md quotes the emulated H200 runs as they printed") {
  const std::string readme = ts::testing::read_source("tutorials/README.md");
  const std::string log80 = ts::testing::read_source("docs/h200-runs/gpu-check/emulate-8.0.log");
  const std::string log75 = ts::testing::read_source("docs/h200-runs/gpu-check/emulate-7.5.log");
  const size_t table = readme.find("The lines\nthat differ from the H200's own run:");
  REQUIRE(table != std::string::npos);
  std::istringstream lines(readme.substr(table));
  int quoted = 0;
  for (std::string line; std::getline(lines, line);) {
    const bool both = line.rfind("| 8.0 and 7.5 |", 0) == 0, only80 = line.rfind("| 8.0 |", 0) == 0,
               only75 = line.rfind("| 7.5 |", 0) == 0;
    if (!both && !only80 && !only75) continue;
    const size_t third = line.find('|', line.find('|', line.find('|') + 1) + 1);  // the third column's bar
    const size_t open = line.find('`', third), close = line.find('`', open + 1);
    REQUIRE(close != std::string::npos);
    const std::string quote = line.substr(open + 1, close - open - 1);
    INFO(line);
    if (both || only80) CHECK(log80.find(quote) != std::string::npos);
    if (both || only75) CHECK(log75.find(quote) != std::string::npos);
    ++quoted;
  }
  CHECK(quoted == 4);
}

// README.md's cost of the portable set: every "N s" of its paragraph is a time the committed CI run
// of a fresh clone printed.
TEST_CASE("device: README.md's cost of the portable set is the committed CI run's") {
  const std::string readme = ts::testing::read_source("README.md");
  const std::string run = ts::testing::read_source("docs/cpu-runs/ci/fresh-clone.txt");
  const size_t from = readme.find("What the portable set costs");
  REQUIRE(from != std::string::npos);
  const std::string paragraph = readme.substr(from, readme.find("\n\n", from) - from);
  CHECK(paragraph.find("`docs/cpu-runs/ci/fresh-clone.txt`") != std::string::npos);
  static const std::regex seconds(R"((\d+) s\b)");
  int quoted = 0;
  for (std::sregex_iterator it(paragraph.begin(), paragraph.end(), seconds), end; it != end; ++it, ++quoted)
    CHECK_MESSAGE(run.find(it->str()) != std::string::npos, it->str(), " is not in docs/cpu-runs/ci/fresh-clone.txt");
  CHECK(quoted == 5);
}
