// tests/test_memory_and_syncs.cpp: what tutorial 05 relies on: memory events charged to the op
// that allocated, the peak read from them, the caching allocator's reuse seen as cudaMalloc calls
// that vanish after the first step (GPU), the wait of item() and of to(cpu) recorded with its
// flow (GPU); the tutorial itself on the CPU (and on a GPU when there is one); the walk-through's
// quotes against the committed outputs.
//
// The GPU cases start with "profiler cuda" so that `make gpu-check` runs them with the profiler's
// other CUPTI cases, outside compute-sanitizer.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "profiler/chrome_trace.h"
#include "profiler/profiler.h"
#include "tensor/cuda_allocator.h"
#include "tensor/cuda_device.h"
#include "tests/support/run_command.h"
#ifdef TS_SOURCE_DIR
#include "tests/support/quote_check.h"
#endif

namespace prof = ts::profiler;
using prof::Event;
using prof::EventKind;

namespace {

bool skip_without_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

std::string parent_name(const prof::Recording& r, const Event& e) {
  return e.parent < 0 ? std::string() : std::string(r.events[static_cast<size_t>(e.parent)].name);
}

// True when an enclosing CPU scope of `e` (its parent, the parent's parent...) is named `name`.
bool inside(const prof::Recording& r, const Event& e, std::string_view name) {
  for (int32_t p = e.parent; p >= 0; p = r.events[static_cast<size_t>(p)].parent)
    if (r.events[static_cast<size_t>(p)].name == name) return true;
  return false;
}

// GPU times are put on the CPU's clock to within about a microsecond: comparisons across the two allow a few.
constexpr int64_t kClockSlackNs = 5'000;

std::vector<const Event*> of_kind(const prof::Recording& r, EventKind kind, std::string_view name = {}) {
  std::vector<const Event*> out;
  for (const Event& e : r.events)
    if (e.kind == kind && (name.empty() || e.name == name)) out.push_back(&e);
  return out;
}

}  // namespace

TEST_CASE("profiler memory: an op's output is charged to the op, a temporary's free to the scope it dies in") {
  const ts::Tensor x = ts::randn({64, 96});
  constexpr int64_t kBytes = 64 * 96 * 4;
  prof::ProfilerConfig config;
  config.profile_memory = true;
  prof::Profiler p(config);
  ts::Tensor kept;
  {
    prof::ProfilerGuard guard(p);
    auto scope = prof::record_function("block");
    kept = ts::mul(ts::gelu(x), x);  // gelu's output is a temporary: it dies at the end of the statement
  }
  const prof::Recording& r = p.recording();
  std::map<std::string, int64_t> allocated, freed;
  for (const Event* e : of_kind(r, EventKind::memory)) {
    CHECK(e->memory_device == ts::kCPU);
    (e->bytes > 0 ? allocated : freed)[parent_name(r, *e)] += e->bytes;
  }
  CHECK(allocated == std::map<std::string, int64_t>{{"ts::gelu", kBytes}, {"ts::mul", kBytes}});
  CHECK(freed == std::map<std::string, int64_t>{{"block", -kBytes}});  // `kept` lives on, past the profile

  const prof::EventList rows = p.key_averages();
  const prof::KeyAverage *gelu = rows.find("ts::gelu"), *block = rows.find("block");
  REQUIRE(gelu != nullptr);
  REQUIRE(block != nullptr);
  CHECK(gelu->self_cpu_memory_usage == kBytes);
  CHECK(block->self_cpu_memory_usage == -kBytes);
  CHECK(block->cpu_memory_usage == kBytes);  // the mul's output, still alive when the block ends
  const std::string table = rows.table("self_cpu_memory_usage");
  INFO(table);
  CHECK(table.find("CPU Mem  Self CPU Mem") != std::string::npos);
  CHECK(table.find("-24.00 KB") != std::string::npos);  // PyTorch's units: a free is negative
  CHECK(table.find("24.00 KB") != std::string::npos);
}

TEST_CASE("profiler memory: the peak read from the memory events is the allocator's, event by event") {
  prof::ProfilerConfig config;
  config.profile_memory = true;
  prof::Profiler p(config);
  constexpr int64_t MB = 1 << 20;
  {
    prof::ProfilerGuard guard(p);
    ts::Tensor a = ts::empty({MB / 4});          // 1 MB
    const ts::Tensor b = ts::empty({2 * MB / 4});  // 2 MB: 3 MB live
    a = ts::Tensor();                            // 2 MB live
    const ts::Tensor c = ts::empty({3 * MB / 4});  // 5 MB live: the peak
  }                                              // b and c freed: 0
  const std::vector<const Event*> events = of_kind(p.recording(), EventKind::memory);
  REQUIRE(events.size() == 6);
  int64_t live = 0, peak = 0;
  const int64_t base = events.front()->total_allocated - events.front()->bytes;
  for (const Event* e : events) {
    live += e->bytes;
    peak = std::max(peak, live);
    CHECK(e->total_allocated == base + live);  // the CPU allocator's own count after the event
    if (e->bytes > 0) CHECK(parent_name(p.recording(), *e) == "ts::empty");
  }
  CHECK(peak == 5 * MB);
  CHECK(live == 0);
}

TEST_CASE("profiler cuda memory: the first step calls cudaMalloc, a later step reuses the cached block") {
  if (skip_without_gpu()) return;
  ts::cuda::synchronize();
  ts::cuda::empty_cache();  // no cached block of this size left from earlier cases
  const int64_t before = ts::cuda::memory_stats().num_allocs;
  prof::ProfilerConfig config;
  config.activities = {prof::Activity::CPU, prof::Activity::CUDA};
  config.schedule = prof::Schedule{.wait = 0, .warmup = 0, .active = 3, .repeat = 1};
  config.profile_memory = true;
  prof::Profiler p(config);
  constexpr int64_t kElems = int64_t{256} << 20;  // 1 GB of f32: no cached block is that large
  {
    prof::ProfilerGuard guard(p);
    for (int i = 0; i < 3; ++i) {
      {
        ts::Tensor t = ts::empty({kElems}, {ts::DType::f32, ts::kCUDA});
        ts::fill_(t, i);
      }
      p.step();
    }
  }
  const prof::Recording& r = p.recording();
  REQUIRE(r.device_activity.source == "cupti");
  const int64_t allocator_mallocs = ts::cuda::memory_stats().num_allocs - before;
  std::vector<int> mallocs, frees, allocations;
  for (const Event* step : of_kind(r, EventKind::profiler_step)) {
    const auto in_step = [&](const Event* e) { return e->start_ns >= step->start_ns && e->start_ns <= step->end_ns; };
    int m = 0, f = 0, a = 0;
    for (const Event* e : of_kind(r, EventKind::cuda_runtime, "cudaMalloc")) m += in_step(e);
    for (const Event* e : of_kind(r, EventKind::cuda_runtime, "cudaFree")) f += in_step(e);
    for (const Event* e : of_kind(r, EventKind::memory))
      if (in_step(e) && e->bytes > 0) {
        ++a;
        CHECK(e->bytes == kElems * 4);
        CHECK(parent_name(r, *e) == "ts::empty");
      }
    mallocs.push_back(m);
    frees.push_back(f);
    allocations.push_back(a);
  }
  INFO("cudaMalloc per step: ", fmt::format("{}", fmt::join(mallocs, " ")),
       "; cudaFree per step: ", fmt::format("{}", fmt::join(frees, " ")));
  REQUIRE(mallocs.size() == 3);
  CHECK(allocations == std::vector<int>{1, 1, 1});
  CHECK(mallocs[0] + mallocs[1] + mallocs[2] == allocator_mallocs);  // each one the allocator's
  if (ts::cuda::caching_enabled()) {
    CHECK(mallocs == std::vector<int>{1, 0, 0});  // later steps find the block in the cache
    CHECK(frees == std::vector<int>{0, 0, 0});
    // The cudaMalloc sits under the op that allocated (ts::empty), inside step 0.
    for (const Event* e : of_kind(r, EventKind::cuda_runtime, "cudaMalloc")) CHECK(inside(r, *e, "ts::empty"));
  } else {
    CHECK(mallocs == std::vector<int>{1, 1, 1});  // TS_CUDA_NO_CACHING=1: a cudaMalloc and a cudaFree per tensor
    CHECK(frees == std::vector<int>{1, 1, 1});
  }
}

TEST_CASE("profiler cuda memory: under TS_CUDA_NO_CACHING=1 every step calls cudaMalloc and cudaFree") {
  if (skip_without_gpu()) return;
  const ts::testing::Run child = ts::testing::run(fmt::format(
      "TS_CUDA_NO_CACHING=1 /proc/{}/exe -tc='profiler cuda memory: the first step calls cudaMalloc*'", getpid()));
  INFO(child.output);
  CHECK(child.status == 0);
  CHECK(child.output.find("1 passed") != std::string::npos);
}

TEST_CASE("profiler cuda syncs: item() waits in a cudaMemcpy joined to its copy, and to(cpu) in a Stream Sync") {
  if (skip_without_gpu()) return;
  const ts::Tensor a = ts::randn({2048, 2048}, {ts::DType::bf16, ts::kCUDA});
  ts::Tensor s = ts::sum(ts::sum(ts::mm(a, a), 1), 0);  // first use: cuBLAS's handle, outside the profile
  ts::cuda::synchronize();
  prof::ProfilerConfig config;
  config.activities = {prof::Activity::CPU, prof::Activity::CUDA};
  prof::Profiler p(config);
  float by_item = 0, by_to = 0;
  {
    prof::ProfilerGuard guard(p);
    s = ts::sum(ts::sum(ts::mm(a, a), 1), 0);
    by_item = s.item<float>();
    by_to = ts::to(s, ts::kCPU).item<float>();
  }
  CHECK(by_item == by_to);
  const prof::Recording& r = p.recording();
  REQUIRE(r.device_activity.source == "cupti");
  const std::string json = prof::chrome_trace_json(r, "t.json");
  std::map<uint64_t, const Event*> gpu;
  int64_t last_kernel_end = 0;
  for (const Event& e : r.events) {
    if (e.kind == EventKind::memcpy || e.kind == EventKind::cuda_sync) gpu.emplace(e.correlation, &e);
    if (e.kind == EventKind::kernel) last_kernel_end = std::max(last_kernel_end, e.end_ns);
  }
  const auto has_flow_end = [&](uint64_t id) {
    return json.find(fmt::format("\"ph\": \"f\", \"id\": {},", id)) != std::string::npos;
  };

  // item(): not an op, a cudaMemcpy with no scope around it, waiting for a copy queued behind the kernels.
  const std::vector<const Event*> memcpys = of_kind(r, EventKind::cuda_runtime, "cudaMemcpy");
  REQUIRE(memcpys.size() == 1);
  const Event& call = *memcpys[0];
  CHECK(call.parent == -1);
  REQUIRE(gpu.contains(call.correlation));
  const Event& copy = *gpu[call.correlation];
  CHECK(copy.kind == EventKind::memcpy);
  CHECK(copy.name.find("DtoH") != std::string_view::npos);
  CHECK(copy.start_ns >= last_kernel_end);  // behind the kernels on the stream
  CHECK(copy.end_ns <= call.end_ns + kClockSlackNs);  // the call returned after the copy: the host waited
  CHECK(has_flow_end(call.correlation));

  // to(cpu): an op; its copy_ ends in a cudaStreamSynchronize, recorded as a Stream Sync on the stream.
  const std::vector<const Event*> syncs = of_kind(r, EventKind::cuda_runtime, "cudaStreamSynchronize");
  REQUIRE(syncs.size() == 1);
  const Event& sync_call = *syncs[0];
  CHECK(inside(r, sync_call, "ts::copy_"));
  CHECK(inside(r, sync_call, "ts::to"));
  REQUIRE(gpu.contains(sync_call.correlation));
  const Event& wait = *gpu[sync_call.correlation];
  CHECK(wait.kind == EventKind::cuda_sync);
  CHECK(wait.name == "Stream Sync");
  CHECK(wait.end_ns <= sync_call.end_ns + kClockSlackNs);
  CHECK(has_flow_end(sync_call.correlation));
  // The table: the op's CPU total holds the wait.
  const prof::EventList rows = p.key_averages();
  const prof::KeyAverage *to = rows.find("ts::to"), *sync_row = rows.find("cudaStreamSynchronize");
  REQUIRE(to != nullptr);
  REQUIRE(sync_row != nullptr);
  CHECK(to->cpu_time_total_ns >= sync_row->cpu_time_total_ns);
}

// ---- the tutorial -----------------------------------------------------------------------------------

#ifdef TS_TUTORIAL_DIR
TEST_CASE("tutorials: 05_memory_and_syncs runs every lesson at a small size on the CPU and passes its checks") {
  const ts::testing::Run run = ts::testing::run(
      std::string("\"") + TS_TUTORIAL_DIR +
      "/05_memory_and_syncs\" --device cpu --batch 2 --seq 8 --dim 64 --hidden 96 --timing-rows 16 --out-dir "
      "/tmp/ts_tutorial_test/05");
  INFO(run.output);
  CHECK(run.status == 0);
  CHECK(run.output.find("all checks passed") != std::string::npos);
  CHECK(run.output.find("MISMATCH") == std::string::npos);
  CHECK(run.output.find("CPU Mem  Self CPU Mem") != std::string::npos);
  // eager holds 4 [16, 96] f32... in bf16: 4 x 3072 B + the [16, 64] output, 2048 B.
  CHECK(run.output.find("peak 14.00 KB above the step's start") != std::string::npos);
  CHECK(run.output.find("peak 11.00 KB above the step's start") != std::string::npos);  // fused, merged
}

TEST_CASE("tutorials: 05_memory_and_syncs refuses a bad lesson in one line") {
  const ts::testing::Run run =
      ts::testing::run(std::string("\"") + TS_TUTORIAL_DIR + "/05_memory_and_syncs\" --device cpu --lesson memroy");
  CHECK(run.status == 2);
  CHECK(run.output.find("--lesson") != std::string::npos);
}

TEST_CASE("profiler cuda tutorial: 05_memory_and_syncs on the GPU, with and without the caching allocator") {
  if (skip_without_gpu()) return;
  const std::string cmd = std::string("\"") + TS_TUTORIAL_DIR +
                          "/05_memory_and_syncs\" --device cuda --batch 4 --seq 64 --dim 128 --hidden 512 "
                          "--timing-rows 256 --out-dir /tmp/ts_tutorial_test/05_cuda";
  for (const std::string env : {"", "TS_CUDA_NO_CACHING=1 "}) {
    const ts::testing::Run run = ts::testing::run(env + cmd);
    INFO(env, run.output);
    CHECK(run.status == 0);
    CHECK(run.output.find("all checks passed") != std::string::npos);
  }
}
#endif

// ---- the walk-through quotes the committed runs --------------------------------------------------

#ifdef TS_SOURCE_DIR

TEST_CASE("tutorials/05_memory_and_syncs.md quotes only numbers and lines of the committed runs it names") {
  const std::string corpus =
      ts::testing::read_folder("docs/h200-runs/05_memory_and_syncs") +
      ts::testing::read_folder("docs/cpu-runs/05_memory_and_syncs");
  // The tutorial's three pages, one per lesson, with what each quotes at least (numbers, excerpt lines).
  struct Page {
    const char* path;
    int numbers, excerpt_lines;
  };
  for (const Page& page : {Page{"tutorials/05_memory_and_syncs.md", 28, 60}, Page{"tutorials/05_memory_and_syncs_syncs.md", 13, 36},
                           Page{"tutorials/05_memory_and_syncs_timing.md", 26, 25}}) {
    const auto [numbers, excerpt_lines] = ts::testing::check_quotes(page.path, ts::testing::read_source(page.path), corpus);
    INFO(std::string(page.path), ": ", numbers, " numbers, ", excerpt_lines, " excerpt lines");
    CHECK(numbers >= page.numbers);              // the page quotes numbers...
    CHECK(excerpt_lines >= page.excerpt_lines);  // ...and excerpts, and the check saw them
  }
}
#endif
