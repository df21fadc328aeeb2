// tests/test_profiler_trace.cpp: the Chrome trace: Kineto's layout, units, gzip, atomic writes,
// and ts_trace_check on every trace written here.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>

#include "ops/ops.h"
#include "profiler/chrome_trace.h"
#include "profiler/profiler.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/synthetic_events.h"

namespace prof = ts::profiler;
namespace fs = std::filesystem;
using ts::testing::SyntheticEvents;

namespace {

// A directory for this process's traces, removed when the process exits.
const fs::path& scratch_dir() {
  static const ts::testing::ScratchDir dir("ts_profiler_trace_tests");
  return dir.path();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string gunzip(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char chunk[1 << 15];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(n));
  gzclose(f);
  return text;
}

// Runs ts_trace_check; returns its exit status and keeps its report for the failure message.
int trace_check(const fs::path& trace, int steps = -1, std::string* report = nullptr) {
  const fs::path out = trace.string() + ".check.txt";
  const std::string command = fmt::format("{} {} {} > {} 2>&1", TS_TRACE_CHECK, trace.string(),
                                          steps >= 0 ? fmt::format("--steps {}", steps) : "", out.string());
  const int status = std::system(command.c_str());
  const std::string text = read_text(out);
  if (report != nullptr) *report = text;
  INFO(text);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A CPU profile of tutorial 01's loop, as a recording.
prof::Recording profile_matmul_add(prof::ProfilerConfig config) {
  const ts::Tensor x = ts::randn({16, 16}), w = ts::randn({16, 16}), b = ts::randn({16});
  config.schedule = prof::schedule(1, 1, 3, 1);
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < 5; ++i) {
      {
        auto scope = prof::record_function("matmul_add");
        ts::add(ts::matmul(x, w), b);
      }
      profiler.step();  // outside the scope: ProfilerStep#N must enclose it
    }
  }
  return profiler.recording();
}

}  // namespace

TEST_CASE("chrome trace: Kineto's top-level keys, in Kineto's order, metadata before traceEvents") {
  SyntheticEvents s;
  s.step("ProfilerStep#2", 1000, 61000, -1);
  s.op("ts::add", 2000, 3500, 0);
  const fs::path path = scratch_dir() / "keys.json";
  prof::export_chrome_trace(s.rec, path.string());
  const std::string text = read_text(path);

  size_t at = 0;
  for (const char* key : {"\"schemaVersion\": 1,", "\"deviceProperties\": [],", "\"distributedInfo\": {\"rank\": 0},",
                          "\"dropped_events\": 0,", "\"displayTimeUnit\": \"ms\",", "\"baseTimeNanoseconds\": ",
                          "\"traceEvents\": [", "\"traceName\": "}) {
    const size_t found = text.find(key, at);
    INFO(key);
    REQUIRE(found != std::string::npos);
    at = found;
  }
  const auto trace = nlohmann::ordered_json::parse(text);
  CHECK(trace["baseTimeNanoseconds"].get<int64_t>() == prof::trace_base_time_ns());
  CHECK(prof::trace_base_time_ns() % (7'889'238LL * 1'000'000'000LL) == 0);
  CHECK(trace["traceName"] == path.string());
  CHECK(trace["traceEvents"].back()["name"] == "Record Window End");
  CHECK(trace_check(path, 1) == 0);
}

TEST_CASE("chrome trace: ts and dur in microseconds with three decimals, relative to the base") {
  SyntheticEvents s;  // its steady clock reads base + 1 s at time 0
  s.step("ProfilerStep#2", 1000, 61001, -1);
  s.op("ts::mm", 4500, 39000, 0);
  s.inputs(1, {{64, 32}, {32, 16}}, 0);
  s.rec.record_shapes = true;
  const std::string text = prof::chrome_trace_json(s.rec, "t.json");
  CHECK(text.find("\"name\": \"ProfilerStep#2\", \"pid\": 100, \"tid\": 1,\n    \"ts\": 1000001.000, \"dur\": 60.001") !=
        std::string::npos);
  CHECK(text.find("\"ts\": 1000004.500, \"dur\": 34.500") != std::string::npos);
  CHECK(text.find("\"External id\": 2, \"Record function id\": 0, \"Concrete Inputs\": [\"\", \"\"], \"Input type\": "
                  "[\"float\", \"float\"], \"Input Strides\": [[32, 1], [16, 1]], \"Input Dims\": [[64, 32], [32, 16]]") !=
        std::string::npos);
  // Every ts of an event is printed with exactly three decimals.
  const std::regex ts_format(R"re("ts": (\d+)(\.\d+)?)re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), ts_format); it != std::sregex_iterator(); ++it)
    CHECK((*it)[2].str().size() == 4);
}

TEST_CASE("chrome trace: .gz writes gzip, the write is atomic, a bad path throws") {
  const prof::Recording rec = profile_matmul_add({});
  const fs::path plain = scratch_dir() / "matmul_add.json";
  const fs::path gz = scratch_dir() / "matmul_add.json.gz";
  prof::export_chrome_trace(rec, plain.string());
  prof::export_chrome_trace(rec, gz.string());
  CHECK_FALSE(fs::exists(plain.string() + ".tmp"));
  CHECK_FALSE(fs::exists(gz.string() + ".tmp"));
  const std::string unzipped = gunzip(gz);
  const std::string text = read_text(plain);
  CHECK(unzipped.size() == text.size() + 3);  // only traceName differs: ".gz"
  CHECK(read_text(gz).substr(0, 2) == "\x1f\x8b");
  CHECK(trace_check(plain, 3) == 0);
  CHECK(trace_check(gz, 3) == 0);
  CHECK_THROWS_AS(prof::export_chrome_trace(rec, "/nonexistent-dir/trace.json"), ts::Error);
}

TEST_CASE("chrome trace: ops with shapes, stacks, memory events, and the checker counts steps and ops") {
  prof::ProfilerConfig config;
  config.record_shapes = true;
  config.profile_memory = true;
  config.with_stack = true;
  config.with_flops = true;
  const prof::Recording rec = profile_matmul_add(config);
  const fs::path path = scratch_dir() / "everything.json";
  prof::export_chrome_trace(rec, path.string());
  std::string report;
  REQUIRE(trace_check(path, 3, &report) == 0);
  CHECK(report.find("ProfilerStep: #2..#4 (3 steps)") != std::string::npos);
  CHECK(report.find("ts::add x3 ts::matmul x3 ts::mm x3") != std::string::npos);

  const auto trace = nlohmann::json::parse(read_text(path));
  int memory = 0, ops = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["name"] == "[memory]") {
      ++memory;
      CHECK(e["ph"] == "i");
      CHECK(e["cat"] == "cpu_instant_event");
      CHECK(e["args"]["Device Id"] == -1);
      CHECK(e["args"]["Device Type"] == 0);
    }
    if (e.value("cat", "") == "cpu_op") {
      ++ops;
      CHECK(e["args"].contains("Input Dims"));
      CHECK(e["args"].contains("Call stack"));
      CHECK(e["args"]["Call stack"].get<std::string>().find("test_profiler_trace.cpp") != std::string::npos);
    }
    if (e["name"] == "ts::mm") CHECK(e["args"]["flops"] == 2 * 16 * 16 * 16);
  }
  CHECK(memory >= 6);  // at least the matmul and add outputs of each step, allocated and freed
  CHECK(ops == 9);
  CHECK(trace["record_shapes"] == 1);
  CHECK(trace["profile_memory"] == 1);
  // Process and thread names for the viewer.
  bool process_name = false, thread_name = false;
  for (const auto& e : trace["traceEvents"]) {
    process_name = process_name || (e["name"] == "process_name" && e["pid"] == rec.pid);
    thread_name = thread_name || e["name"] == "thread_name";
  }
  CHECK(process_name);
  CHECK(thread_name);
}

TEST_CASE("chrome trace: CUDA events (kernels, launches, flows) pass the checker") {
  SyntheticEvents s(/*use_cuda=*/true);
  s.step("ProfilerStep#2", 1000, 181185, -1);
  s.annotation("matmul_add", 19706, 173927, 0);
  s.op("ts::matmul", 43841, 119946, 1);
  s.op("ts::mm", 48184, 117196, 2);
  s.driver("cuLaunchKernelEx", 101659, 115391, 3);
  s.gpu_annotation("matmul_add", 116296, 148874);
  s.kernel("nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT", 116297, 118185, 3);
  s.op("ts::add", 129986, 147946, 1);
  s.runtime("cudaLaunchKernel", 140046, 146120, 7);
  s.kernel("ts_add_kernel", 147945, 148873, 7);
  s.runtime("cudaDeviceSynchronize", 157488, 166403, -1);
  const fs::path path = scratch_dir() / "cuda.json";
  prof::export_chrome_trace(s.rec, path.string());
  std::string report;
  CHECK(trace_check(path, 1, &report) == 0);
  CHECK(report.find("GPU work: 2 (launch calls 3)") != std::string::npos);
  const std::string text = read_text(path);
  CHECK(text.find("\"ph\": \"f\", \"id\": 1000, \"pid\": 0, \"tid\": 7") != std::string::npos);
  CHECK(text.find("\"ph\": \"s\", \"id\": 1000, \"pid\": 100, \"tid\": 1") != std::string::npos);
  CHECK(text.find("\"labels\": \"GPU 0\"") != std::string::npos);
  CHECK(text.find("\"name\": \"stream 7 \"") != std::string::npos);
  // cudaDeviceSynchronize launched no GPU work here: no flow start.
  CHECK(text.find("\"ph\": \"s\", \"id\": 1002") == std::string::npos);
}

TEST_CASE("chrome trace: a synchronization is a cuda_sync slice with its flow, on the device lane, and not a table row") {
  SyntheticEvents s(/*use_cuda=*/true);
  s.op("ts::add", 1000, 9000, -1);
  s.runtime("cudaLaunchKernel", 2000, 5000, 0);
  s.kernel("ts_add_kernel", 6000, 8000, 0);
  const int call = s.runtime("cudaDeviceSynchronize", 10000, 20000, -1);
  s.sync("Context Sync", 10500, 19500, call);
  const fs::path path = scratch_dir() / "sync.json";
  prof::export_chrome_trace(s.rec, path.string());
  std::string report;
  CHECK(trace_check(path, -1, &report) == 0);
  CHECK(report.find("GPU work: 2 (launch calls 2)") != std::string::npos);
  const std::string text = read_text(path);
  CHECK(text.find("\"cat\": \"cuda_sync\", \"name\": \"Context Sync\", \"pid\": 0, \"tid\": -1") != std::string::npos);
  CHECK(text.find("\"cuda_sync_kind\": \"Context Sync\", \"stream\": -1, \"correlation\": 1001") != std::string::npos);
  CHECK(text.find("\"ph\": \"s\", \"id\": 1001, \"pid\": 100, \"tid\": 1") != std::string::npos);
  CHECK(text.find("\"ph\": \"f\", \"id\": 1001, \"pid\": 0, \"tid\": -1") != std::string::npos);
  CHECK(text.find("\"name\": \"Device 0\"") != std::string::npos);

  const prof::EventList rows = prof::key_averages(s.rec);
  CHECK(rows.find("Context Sync", /*is_device=*/true) == nullptr);
  CHECK(rows.find("Context Sync") == nullptr);
  REQUIRE(rows.find("ts_add_kernel", /*is_device=*/true) != nullptr);
  CHECK(rows.find("ts::add")->self_device_time_total_ns == 2000);

  // A sync whose call is missing is reported like a kernel's.
  SyntheticEvents k(/*use_cuda=*/true);
  const int lone = k.runtime("cudaStreamSynchronize", 1000, 2000, -1);
  k.sync("Stream Sync", 1500, 1900, lone);
  k.at(lone).correlation = 77;  // the call now names another correlation
  const fs::path orphan = scratch_dir() / "orphan_sync.json";
  prof::export_chrome_trace(k.rec, orphan.string());
  CHECK(trace_check(orphan, -1, &report) == 1);
  CHECK(report.find("cuda_sync \"Stream Sync\" (correlation 1000) has no launch call") != std::string::npos);
}

TEST_CASE("chrome trace: CUPTI overhead is a lane of its own and never an op's time") {
  SyntheticEvents s(/*use_cuda=*/true);
  s.op("ts::add", 1000, 9000, -1);
  s.runtime("cudaLaunchKernel", 2000, 5000, 0);
  s.overhead("Activity Buffer Request", 3000, 4000);  // inside the op, on the host
  s.kernel("ts_add_kernel", 6000, 8000, 0);
  const fs::path path = scratch_dir() / "overhead.json";
  prof::export_chrome_trace(s.rec, path.string());
  std::string report;
  CHECK(trace_check(path, -1, &report) == 0);
  const std::string text = read_text(path);
  CHECK(text.find("\"cat\": \"overhead\", \"name\": \"Activity Buffer Request\", \"pid\": -1, \"tid\": 0") !=
        std::string::npos);
  CHECK(text.find("\"name\": \"CUPTI overhead\"") != std::string::npos);
  const prof::EventList rows = prof::key_averages(s.rec);
  CHECK(rows.find("Activity Buffer Request") == nullptr);
  CHECK(rows.find("Activity Buffer Request", /*is_device=*/true) == nullptr);
  CHECK(rows.find("ts::add")->self_device_time_total_ns == 2000);  // the kernel only
  CHECK(rows.find("ts::add")->self_cpu_time_total_ns == 8000 - 3000);  // minus its launch call, not the overhead
}

TEST_CASE("chrome trace: a launch with several kernels (a CUDA graph's) gets one arrow per kernel") {
  SyntheticEvents s(/*use_cuda=*/true);
  const int replay = s.op("ts::cuda::Graph::replay", 1000, 9000, -1);
  const int launch = s.runtime("cudaGraphLaunch", 2000, 4000, replay);
  const uint64_t c = s.at(launch).correlation;
  for (int k = 0; k < 3; ++k) s.kernel("gemm", 5000 + 1000 * k, 5500 + 1000 * k, replay);
  const fs::path path = scratch_dir() / "graph_launch.json";
  prof::export_chrome_trace(s.rec, path.string());
  const std::string text = read_text(path);
  for (uint64_t k = 0; k < 3; ++k) {
    const uint64_t id = c + (k << 32);  // the k-th kernel's arrow
    CAPTURE(id);
    CHECK(count(text, fmt::format("\"ph\": \"s\", \"id\": {},", id)) == 1);
    CHECK(count(text, fmt::format("\"ph\": \"f\", \"id\": {},", id)) == 1);
  }
  CHECK(count(text, fmt::format("\"ph\": \"s\", \"id\": {},", c + (uint64_t{3} << 32))) == 0);
  std::string report;
  CHECK(trace_check(path, -1, &report) == 0);

  // The same three kernels ending one arrow, as Kineto writes a graph launch: two have none of their own.
  std::string shared = text;
  for (uint64_t k = 1; k < 3; ++k) {
    const std::string from = fmt::format("\"ph\": \"f\", \"id\": {},", c + (k << 32));
    shared.replace(shared.find(from), from.size(), fmt::format("\"ph\": \"f\", \"id\": {},", c));
  }
  const fs::path kineto = scratch_dir() / "graph_launch_shared_id.json";
  std::ofstream(kineto) << shared;
  CHECK(trace_check(kineto, -1, &report) == 1);
  CHECK(report.find("has 3 incoming flows from 1 flow starts, expected 1 and 1") != std::string::npos);
}

TEST_CASE("ts_trace_check: finds overlapping slices, a kernel before its launch, missing keys") {
  SyntheticEvents s(/*use_cuda=*/true);
  s.op("ts::a", 1000, 5000, -1);
  s.op("ts::b", 4000, 9000, -1);  // starts inside a, ends after it
  const fs::path overlap = scratch_dir() / "overlap.json";
  prof::export_chrome_trace(s.rec, overlap.string());
  std::string report;
  CHECK(trace_check(overlap, -1, &report) == 1);
  CHECK(report.find("overlaps") != std::string::npos);

  SyntheticEvents k(/*use_cuda=*/true);
  k.op("ts::mm", 1000, 9000, -1);
  k.runtime("cudaLaunchKernel", 5000, 6000, 0);
  k.kernel("gemm", 4000, 4500, 0);  // before its launch
  const fs::path early = scratch_dir() / "early.json";
  prof::export_chrome_trace(k.rec, early.string());
  CHECK(trace_check(early, -1, &report) == 1);
  CHECK(report.find("starts before its launch call") != std::string::npos);

  const fs::path broken = scratch_dir() / "broken.json";
  std::ofstream(broken) << R"({"traceEvents": [{"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 1.0}]})";
  CHECK(trace_check(broken, 2, &report) == 1);
  CHECK(report.find("missing top-level key \"schemaVersion\"") != std::string::npos);
  CHECK(report.find("expected 2 ProfilerStep events, found 0") != std::string::npos);

  const fs::path not_json = scratch_dir() / "not.json";
  std::ofstream(not_json) << "{\"traceEvents\": [";
  CHECK(trace_check(not_json) == 1);
}
