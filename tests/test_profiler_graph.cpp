// tests/test_profiler_graph.cpp: a CUDA graph replay in the profile (profiler/graph_replays.h).
//
// On the CPU, on recordings made by hand: a replay's captured ops become its children with no CPU
// time, its GPU work is charged to them node by node, and a replay whose work does not match its
// graph stays on the replay's row and is counted and printed. On a GPU ("profiler cuda: ..."): a
// profiled replay of part 1's step and of the GeGLU MLP charges every kernel to the op that
// captured it, the same kernels per op as the eager step, and its trace passes ts_trace_check.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "profiler/chrome_trace.h"
#include "profiler/graph_replays.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"

namespace prof = ts::profiler;
namespace fs = std::filesystem;
using prof::Event;
using prof::EventKind;

namespace {

// part 1's step as a capture records it: matmul (whose mm launches the GEMM) then add.
std::shared_ptr<prof::CapturedGraph> part1_graph() {
  auto g = std::make_shared<prof::CapturedGraph>();
  g->ops = {{.name = "ts::matmul", .parent = -1, .nodes_begin = 0, .nodes_end = 1},
            {.name = "ts::mm", .variant = "mm/cuda/cublaslt", .parent = 0, .nodes_begin = 0, .nodes_end = 1},
            {.name = "ts::add", .variant = "add/cuda/vectorized", .parent = -1, .nodes_begin = 1, .nodes_end = 2}};
  g->known = true;
  g->nodes = {prof::NodeKind::kernel, prof::NodeKind::kernel};
  g->after = {{1}, {}};  // a chain: the add waits on the GEMM
  g->node_op = {1, 2};
  return g;
}

// A recording of `replays` replays of `graph`, 100 us apart: each a replay event (id 10 + r), its
// cudaGraphLaunch, and `kernels` kernels (1 us each, in order) stamped with the replay's id.
prof::Recording recorded_replays(std::shared_ptr<const prof::CapturedGraph> graph, int replays, int kernels) {
  prof::Recording rec;
  rec.use_cuda = true;
  rec.record_shapes = rec.with_stack = true;
  for (int r = 0; r < replays; ++r) {
    const int64_t t = 1'000'000 + r * 100'000;
    const uint64_t id = 10 + static_cast<uint64_t>(r);
    const auto replay = static_cast<int32_t>(rec.events.size());
    rec.events.push_back({.kind = EventKind::cpu_op, .name = prof::kGraphReplayName, .start_ns = t,
                          .end_ns = t + 5'000, .id = id, .tid = 7});
    rec.events.push_back({.kind = EventKind::cuda_runtime, .name = "cudaGraphLaunch", .start_ns = t + 1'000,
                          .end_ns = t + 4'000, .id = id, .tid = 7, .parent = replay,
                          .correlation = static_cast<uint64_t>(500 + r)});
    for (int k = 0; k < kernels; ++k)
      rec.events.push_back({.kind = EventKind::kernel, .name = k == 0 ? "gemm" : "add_kernel",
                            .start_ns = t + 10'000 + k * 2'000, .end_ns = t + 11'000 + k * 2'000, .id = id, .tid = 3,
                            .device = 0, .stream = 3, .correlation = static_cast<uint64_t>(500 + r)});
    rec.graph_replays.push_back({.id = id, .graph = graph});
  }
  return rec;
}

const Event* find_event(const prof::Recording& rec, EventKind kind, std::string_view name, int nth = 0) {
  for (const Event& e : rec.events)
    if (e.kind == kind && e.name == name && nth-- == 0) return &e;
  return nullptr;
}

bool skip_without_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

}  // namespace

TEST_CASE("profiler graph replays: each replay's kernels are charged to the ops captured for their nodes") {
  prof::Recording rec = recorded_replays(part1_graph(), 3, 2);
  prof::expand_graph_replays(rec);
  CHECK(rec.graph_replays.empty());
  CHECK(rec.device_activity.graph_replays_unmatched == 0);
  for (int r = 0; r < 3; ++r) {
    const Event* replay = find_event(rec, EventKind::cpu_op, prof::kGraphReplayName, r);
    const Event* matmul = find_event(rec, EventKind::cpu_op, "ts::matmul", r);
    const Event* mm = find_event(rec, EventKind::cpu_op, "ts::mm", r);
    const Event* add = find_event(rec, EventKind::cpu_op, "ts::add", r);
    REQUIRE((replay && matmul && mm && add));
    CHECK(matmul->duration_ns() == 0);  // nothing of it ran on the host
    CHECK(matmul->start_ns == replay->start_ns);
    CHECK(&rec.events[static_cast<size_t>(matmul->parent)] == replay);
    CHECK(&rec.events[static_cast<size_t>(mm->parent)] == matmul);
    CHECK(&rec.events[static_cast<size_t>(add->parent)] == replay);
    CHECK(std::string_view(mm->variant) == "mm/cuda/cublaslt");
    CHECK(find_event(rec, EventKind::kernel, "gemm", r)->id == mm->id);
    CHECK(find_event(rec, EventKind::kernel, "add_kernel", r)->id == add->id);
    CHECK(mm->id != add->id);
  }
  // The table reads like an eager step's: each op with its kernel time, the replay with none of its own.
  const prof::EventList rows = prof::key_averages(rec);
  const prof::KeyAverage* mm = rows.find("ts::mm");
  const prof::KeyAverage* matmul = rows.find("ts::matmul");
  const prof::KeyAverage* replay = rows.find(prof::kGraphReplayName);
  REQUIRE((mm && matmul && replay));
  CHECK(mm->count == 3);
  CHECK(mm->self_device_time_total_ns == 3'000);
  CHECK(mm->cpu_time_total_ns == 0);
  CHECK(matmul->device_time_total_ns == 3'000);
  CHECK(matmul->self_device_time_total_ns == 0);
  CHECK(rows.find("ts::add")->self_device_time_total_ns == 3'000);
  CHECK(replay->count == 3);
  CHECK(replay->self_device_time_total_ns == 0);
  CHECK(replay->device_time_total_ns == 6'000);
  CHECK(replay->cpu_time_total_ns == 15'000);
  const std::string table = rows.table("self_cuda_time_total", 20);
  INFO(table);
  CHECK(table.find("not charged to their ops") == std::string::npos);
}

TEST_CASE("profiler graph replays: work that does not match the graph stays on the replay, counted and printed") {
  SUBCASE("one kernel more than the graph's nodes") {
    prof::Recording rec = recorded_replays(part1_graph(), 2, 3);
    prof::expand_graph_replays(rec);
    CHECK(rec.device_activity.graph_replays_unmatched == 2);
    const Event* replay = find_event(rec, EventKind::cpu_op, prof::kGraphReplayName);
    for (const Event& e : rec.events)
      if (e.kind == EventKind::kernel && e.start_ns < 1'100'000) CHECK(e.id == replay->id);
    CHECK(find_event(rec, EventKind::cpu_op, "ts::mm") != nullptr);  // the ops still show, with no time
    const std::string table = prof::key_averages(rec).table("self_cuda_time_total", 20);
    INFO(table);
    CHECK(table.find("CUDA graph replays not charged to their ops: 2") != std::string::npos);
    CHECK(table.find("the first: 2 nodes (kernel kernel), 3 GPU records (kernel kernel kernel)") != std::string::npos);
  }
  SUBCASE("nodes of two ops that could run in either order") {
    auto g = part1_graph();
    g->after = {{}, {}};
    prof::Recording rec = recorded_replays(g, 1, 2);
    prof::expand_graph_replays(rec);
    CHECK(rec.device_activity.graph_replays_unmatched == 1);
    CHECK(rec.device_activity.first_unmatched_replay.ends_with("record 1 (kernel) could be the work of nodes of two ops"));
  }
  SUBCASE("a graph whose nodes could not be read") {
    auto g = part1_graph();
    g->known = false;
    prof::Recording rec = recorded_replays(g, 1, 2);
    prof::expand_graph_replays(rec);
    CHECK(rec.device_activity.graph_replays_unmatched == 1);
    CHECK(rec.device_activity.first_unmatched_replay == "the graph's nodes could not be read");
  }
  SUBCASE("a copy where the graph has a kernel") {
    prof::Recording rec = recorded_replays(part1_graph(), 1, 2);
    rec.events.back().kind = EventKind::memcpy;
    prof::expand_graph_replays(rec);
    CHECK(rec.device_activity.graph_replays_unmatched == 1);
    CHECK(rec.device_activity.first_unmatched_replay ==
          "2 nodes (kernel kernel), 2 GPU records (kernel memcpy): record 2 (memcpy) is the work of no node ready then");
  }
}

TEST_CASE("profiler graph replays: a fork inside one op, and nodes that run no GPU work, still match") {
  // mm's GEMM forks into two kernels that may run in either order (a library's split work), both
  // before an event node that the add waits on.
  auto g = part1_graph();
  g->ops[1].nodes_end = 2;
  g->ops[2].nodes_begin = 2;
  g->ops[2].nodes_end = 4;
  g->nodes = {prof::NodeKind::kernel, prof::NodeKind::kernel, prof::NodeKind::other, prof::NodeKind::kernel};
  g->after = {{2}, {2}, {3}, {}};
  g->node_op = {1, 1, 2, 2};
  prof::Recording rec = recorded_replays(g, 1, 3);
  prof::expand_graph_replays(rec);
  CHECK(rec.device_activity.graph_replays_unmatched == 0);
  const uint64_t mm = find_event(rec, EventKind::cpu_op, "ts::mm")->id, add = find_event(rec, EventKind::cpu_op, "ts::add")->id;
  CHECK(find_event(rec, EventKind::kernel, "gemm")->id == mm);
  CHECK(find_event(rec, EventKind::kernel, "add_kernel", 0)->id == mm);
  CHECK(find_event(rec, EventKind::kernel, "add_kernel", 1)->id == add);
}

TEST_CASE("profiler graph replays: a copy or set node that ran as a kernel is charged to its op") {
  // CUPTI may report a graph's memcpy or memset node as a kernel ("memcpy128"), not as a copy.
  for (const prof::NodeKind node : {prof::NodeKind::memcpy, prof::NodeKind::memset}) {
    auto g = part1_graph();
    g->nodes[1] = node;
    prof::Recording rec = recorded_replays(g, 1, 2);
    prof::expand_graph_replays(rec);
    CHECK(rec.device_activity.graph_replays_unmatched == 0);
    CHECK(find_event(rec, EventKind::kernel, "add_kernel")->id == find_event(rec, EventKind::cpu_op, "ts::add")->id);
  }
}

TEST_CASE("profiler graph replays: a node captured outside every op stays on the replay") {
  auto g = part1_graph();
  g->node_op[0] = -1;
  prof::Recording rec = recorded_replays(g, 1, 2);
  prof::expand_graph_replays(rec);
  CHECK(rec.device_activity.graph_replays_unmatched == 0);
  CHECK(find_event(rec, EventKind::kernel, "gemm")->id == find_event(rec, EventKind::cpu_op, prof::kGraphReplayName)->id);
  CHECK(find_event(rec, EventKind::kernel, "add_kernel")->id == find_event(rec, EventKind::cpu_op, "ts::add")->id);
}

TEST_CASE("profiler graph replays: a CPU-only recording shows the captured ops, without charging anything") {
  prof::Recording rec = recorded_replays(part1_graph(), 1, 0);
  rec.use_cuda = false;
  prof::expand_graph_replays(rec);
  CHECK(rec.device_activity.graph_replays_unmatched == 0);
  CHECK(find_event(rec, EventKind::cpu_op, "ts::add") != nullptr);
}

namespace {

// Kernel names per op name, in the order they ran, from a recording (the kernel's op by External id).
std::map<std::string, std::vector<std::string>> kernels_by_op(const prof::Recording& rec) {
  std::map<uint64_t, std::string> op_of_id;
  for (const Event& e : rec.events)
    if (e.kind == EventKind::cpu_op && e.id != 0) op_of_id[e.id] = std::string(e.name);
  std::map<std::string, std::vector<std::string>> out;
  for (const Event& e : rec.events)
    if (e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset)
      out[op_of_id.contains(e.id) ? op_of_id[e.id] : "<no op>"].push_back(std::string(e.name));
  return out;
}

prof::Recording profile(const std::function<void()>& step, int steps) {
  prof::ProfilerConfig config;
  config.activities = {prof::Activity::CPU, prof::Activity::CUDA};
  config.record_shapes = config.with_stack = true;
  prof::Profiler p(config);
  p.start();
  for (int i = 0; i < steps; ++i) step();
  p.stop();
  return p.recording();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Profiles `steps` eager steps, then `steps` replays of one capture of it; checks the replay's kernels
// per op against the eager ones, every kernel charged to a captured op, and the trace.
void check_replay_reads_like_eager(const std::string& what, const std::function<void()>& step) {
  constexpr int kSteps = 3;
  step();  // first-use costs (handles, module loading) out of both
  ts::cuda::synchronize();
  const prof::Recording eager = profile(step, kSteps);
  ts::cuda::Graph graph;
  {
    ts::cuda::GraphCapture capture(graph);
    step();
  }
  const prof::Recording replayed = profile([&] { graph.replay(); }, kSteps);
  INFO(what);
  REQUIRE(replayed.device_activity.source == "cupti");
  CHECK(replayed.device_activity.graph_replays_unmatched == 0);

  std::map<std::string, std::vector<std::string>> by_op = kernels_by_op(replayed);
  CHECK(!by_op.contains(prof::kGraphReplayName));  // all of the graph's work went to its ops
  CHECK(!by_op.contains("<no op>"));
  std::map<std::string, std::vector<std::string>> eager_by_op = kernels_by_op(eager);
  CHECK(!eager_by_op.contains("<no op>"));
  CHECK(by_op == eager_by_op);

  const prof::EventList rows = prof::key_averages(replayed);
  const prof::KeyAverage* replay = rows.find(prof::kGraphReplayName);
  const prof::KeyAverage* launch = rows.find("cudaGraphLaunch");
  REQUIRE((replay && launch));
  CHECK(replay->count == kSteps);
  CHECK(launch->count == kSteps);
  int64_t kernel_ns = 0, charged_ns = 0;
  for (const prof::KeyAverage& row : rows.rows) {
    if (row.is_device && !row.is_user_annotation) kernel_ns += row.self_device_time_total_ns;
    if (!row.is_device && row.key != prof::kGraphReplayName) charged_ns += row.self_device_time_total_ns;
  }
  CHECK(kernel_ns > 0);
  CHECK(charged_ns == kernel_ns);  // 100% of the kernel time under the captured ops
  CHECK(replay->device_time_total_ns == kernel_ns);
  const std::string table = rows.table("self_cuda_time_total", 30);
  MESSAGE(what, " replayed:\n", table);

  const fs::path dir = fs::temp_directory_path() / fmt::format("ts_graph_trace_{}", ::getpid());
  fs::create_directories(dir);
  const fs::path trace = dir / "replay.json";
  prof::export_chrome_trace(replayed, trace.string());
  const fs::path report = dir / "check.txt";
  const int status =
      std::system(fmt::format("{} {} > {} 2>&1", TS_TRACE_CHECK, trace.string(), report.string()).c_str());
  INFO(read_text(report));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("profiler cuda: a CUDA graph replay charges each kernel to the op captured for its node") {
  if (skip_without_gpu()) return;
  const ts::Options bf16{ts::DType::bf16, ts::kCUDA};
  SUBCASE("part 1's step at 64") {
    const ts::Tensor x = ts::randn({64, 64}, bf16), w = ts::randn({64, 64}, bf16), b = ts::randn({64}, bf16);
    check_replay_reads_like_eager("part 1 at 64", [&] { (void)ts::add(ts::matmul(x, w), b); });
  }
  SUBCASE("the GeGLU MLP, eager path") {
    const ts::nn::GeGLUMLP mlp(256, 512, ts::nn::MlpPath::eager, bf16);
    const ts::Tensor x = ts::randn({4, 33, 256}, bf16);
    check_replay_reads_like_eager("GeGLU MLP", [&] { (void)mlp.forward(x); });
  }
}
