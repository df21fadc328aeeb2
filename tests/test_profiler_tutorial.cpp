// tests/test_profiler_tutorial.cpp: tutorial 01 runs, validates its result and writes a trace that passes the checker.
#include <doctest/doctest.h>

#include "tests/support/run_command.h"
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "tensor/cuda_device.h"

namespace fs = std::filesystem;

namespace {

using ts::testing::Run;
using ts::testing::run;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Where the tutorial writes its traces; removed when this process exits.
struct OutDir {
  fs::path path = fs::temp_directory_path() / fmt::format("ts_tutorial01_tests_{}", getpid());
  ~OutDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const fs::path& out_dir() {
  static const OutDir dir;
  return dir.path;
}

Run tutorial(const std::string& flags) {
  return run(fmt::format("{}/01_matmul_add --device cpu --out-dir {} {}", TS_TUTORIAL_DIR, out_dir().string(), flags));
}

}  // namespace

TEST_CASE("tutorial 01: eager, f32, size 64: table, trace and a checked result") {
  const Run r = tutorial("--size 64 --dtype f32");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("Guess first") < r.output.find("Self CPU %"));  // expectations before the table
  CHECK(r.output.find("check against a float64 reference: OK") != std::string::npos);
  const fs::path json = out_dir() / "64_f32_cold_eager.json";
  const std::string table = read_text(out_dir() / "64_f32_cold_eager.txt");
  for (const char* row : {"ProfilerStep*", "matmul_add", "ts::matmul", "ts::mm", "ts::add"}) CHECK(table.find(row) != std::string::npos);
  CHECK(table.find("Self CPU time total: ") != std::string::npos);
  const Run check = run(fmt::format("{} {} --steps 3", TS_TRACE_CHECK, json.string()));
  INFO(check.output);
  CHECK(check.status == 0);
  CHECK(check.output.find("ProfilerStep: #2..#4 (3 steps)") != std::string::npos);
}

TEST_CASE("tutorial 01: --batched shows bmm, --fused one addmm, --warmup names the run warm") {
  const Run batched = tutorial("--size 16 --dtype bf16 --batched --active 2");
  INFO(batched.output);
  REQUIRE(batched.status == 0);
  CHECK(read_text(out_dir() / "16_bf16_cold_eager_batched.txt").find("ts::bmm") != std::string::npos);
  CHECK(run(fmt::format("{} {} --steps 2", TS_TRACE_CHECK, (out_dir() / "16_bf16_cold_eager_batched.json").string())).status == 0);

  const Run fused = tutorial("--size 16 --dtype f16 --fused --warmup 2");
  INFO(fused.output);
  REQUIRE(fused.status == 0);
  const std::string table = read_text(out_dir() / "16_f16_warm_fused.txt");
  CHECK(table.find("ts::addmm") != std::string::npos);
  CHECK(table.find("ts::add ") == std::string::npos);
  CHECK(table.find("ts::matmul") == std::string::npos);
}

TEST_CASE("tutorial 01: --schedule-wait 0 --schedule-warmup 0 records from the first call, and says so in the names") {
  const Run r = tutorial("--size 16 --dtype f32 --schedule-wait 0 --schedule-warmup 0 --active 2");
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("every step is recorded, the first call too") != std::string::npos);
  CHECK(r.output.find("ProfilerStep#0 holds the very first call") != std::string::npos);
  const fs::path json = out_dir() / "16_f32_cold_eager_wait0_warmup0.json";
  REQUIRE(fs::exists(out_dir() / "16_f32_cold_eager_wait0_warmup0.txt"));
  const Run check = run(fmt::format("{} {} --steps 2", TS_TRACE_CHECK, json.string()));
  INFO(check.output);
  CHECK(check.status == 0);
  CHECK(check.output.find("ProfilerStep: #0..#1 (2 steps)") != std::string::npos);
}

TEST_CASE("tutorial 01: --device cuda without a GPU fails with a clear message") {
  if (ts::cuda::is_available()) return;
  const Run r = run(fmt::format("{}/01_matmul_add --device cuda --out-dir {}", TS_TUTORIAL_DIR, out_dir().string()));
  CHECK(r.status != 0);
  CHECK(r.output.find("error: ") != std::string::npos);
  CHECK(r.output.find("cuda") != std::string::npos);
}
