// tests/test_profiler.cpp: recording: schedules and steps, nesting, exceptions, threads, bounds, memory, FLOPs.
#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

#include "ops/ops.h"
#include "profiler/chrome_trace.h"
#include "profiler/op_scope.h"
#include "profiler/profiler.h"

namespace prof = ts::profiler;
using prof::Event;
using prof::EventKind;
using prof::ProfilerAction;

namespace {

// Every CPU scope lies inside its parent, on the parent's thread, and ends after it starts.
void check_tree(const std::vector<Event>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    CHECK(e.end_ns >= e.start_ns);
    if (e.parent < 0) continue;
    REQUIRE(static_cast<size_t>(e.parent) < i);  // parents come first
    const Event& p = events[static_cast<size_t>(e.parent)];
    CHECK(p.tid == e.tid);
    CHECK(p.start_ns <= e.start_ns);
    CHECK(e.end_ns <= p.end_ns);
  }
}

std::vector<std::string> names_of_kind(const std::vector<Event>& events, EventKind kind) {
  std::vector<std::string> names;
  for (const Event& e : events)
    if (e.kind == kind) names.emplace_back(e.name);
  return names;
}

int count_named(const std::vector<Event>& events, std::string_view name) {
  int n = 0;
  for (const Event& e : events) n += e.name == name;
  return n;
}

}  // namespace

TEST_CASE("profiler schedule: the same actions as torch.profiler.schedule") {
  using enum ProfilerAction;
  const prof::Schedule s = prof::schedule(1, 1, 3, 1);
  const std::vector<ProfilerAction> want{none, warmup, record, record, record_and_save, none, none, none};
  for (size_t step = 0; step < want.size(); ++step) CHECK(s(static_cast<int64_t>(step)) == want[step]);

  // skip_first, then cycles of wait=2, warmup=1, active=2, repeated twice.
  const prof::Schedule r = prof::schedule(2, 1, 2, 2, 1);
  const std::vector<ProfilerAction> want_r{none, none, none, warmup, record, record_and_save,
                                           none, none, warmup, record, record_and_save, none, none};
  for (size_t step = 0; step < want_r.size(); ++step) CHECK(r(static_cast<int64_t>(step)) == want_r[step]);

  // skip_first_wait: the first cycle starts at its warmup.
  const prof::Schedule w = prof::schedule(2, 1, 1, 0, 0, true);
  CHECK(w(0) == warmup);
  CHECK(w(1) == record_and_save);
  CHECK(w(2) == none);
  CHECK(w(4) == warmup);

  CHECK_THROWS_AS(prof::schedule(1, 1, 0), ts::Error);
  CHECK_THROWS_AS(prof::schedule(-1, 1, 1), ts::Error);
}

TEST_CASE("profiler steps: ProfilerStep#N numbered globally, repeat cycles, on_trace_ready per cycle") {
  const ts::Tensor a = ts::ones({4}), b = ts::ones({4});
  std::vector<std::vector<std::string>> traces;  // step names seen by each on_trace_ready
  prof::ProfilerConfig config;
  config.schedule = prof::schedule(/*wait=*/1, /*warmup=*/1, /*active=*/2, /*repeat=*/2);
  config.on_trace_ready = [&](prof::Profiler& p) {
    traces.push_back(names_of_kind(p.events(), EventKind::profiler_step));
    CHECK(count_named(p.events(), "ts::add") == 2);  // one add per recorded step
    check_tree(p.events());
  };
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < 10; ++i) {
      ts::add(a, b);
      profiler.step();
    }
  }
  REQUIRE(traces.size() == 2);
  CHECK(traces[0] == std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3"});
  CHECK(traces[1] == std::vector<std::string>{"ProfilerStep#6", "ProfilerStep#7"});
  CHECK(profiler.step_num() == 10);
  // Every op of a step is a child of its ProfilerStep.
  for (const Event& e : profiler.events())
    if (e.kind == EventKind::cpu_op) CHECK(profiler.events()[static_cast<size_t>(e.parent)].kind == EventKind::profiler_step);
}

TEST_CASE("profiler steps: the last active step is recorded when the guard ends mid-cycle") {
  const ts::Tensor a = ts::ones({4});
  int ready = 0;
  prof::ProfilerConfig config;
  config.schedule = prof::schedule(0, 1, 3);
  config.on_trace_ready = [&](prof::Profiler&) { ++ready; };
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < 3; ++i) {  // warmup, record, record: stop() ends the window
      ts::neg(a);
      profiler.step();
    }
  }
  CHECK(ready == 1);
  CHECK(names_of_kind(profiler.events(), EventKind::profiler_step) == std::vector<std::string>{"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"});
  CHECK(count_named(profiler.events(), "ts::neg") == 2);
}

TEST_CASE("profiler without a schedule: no step scopes, everything recorded, on_trace_ready at stop") {
  const ts::Tensor a = ts::ones({4});
  int ready = 0;
  prof::ProfilerConfig config;
  config.on_trace_ready = [&](prof::Profiler&) { ++ready; };
  prof::Profiler profiler(config);
  profiler.start();
  ts::neg(a);
  profiler.step();
  ts::neg(a);
  profiler.stop();
  CHECK(ready == 1);
  CHECK(names_of_kind(profiler.events(), EventKind::profiler_step).empty());
  CHECK(count_named(profiler.events(), "ts::neg") == 2);
}

TEST_CASE("profiler nesting: record_function > matmul > mm, and self/total arithmetic") {
  const ts::Tensor x = ts::randn({8, 8}), w = ts::randn({8, 8}), b = ts::randn({8});
  prof::Profiler profiler;
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < 3; ++i) {
      auto scope = prof::record_function("matmul_add");
      ts::add(ts::matmul(x, w), b);
    }
  }
  const auto& events = profiler.events();
  check_tree(events);
  // The chain: matmul_add > ts::matmul > ts::mm, and ts::add under matmul_add.
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.name == "ts::mm") CHECK(events[static_cast<size_t>(e.parent)].name == "ts::matmul");
    if (e.name == "ts::matmul" || e.name == "ts::add") CHECK(events[static_cast<size_t>(e.parent)].name == "matmul_add");
    if (e.name == "matmul_add") CHECK(e.kind == EventKind::user_annotation);
    if (e.kind == EventKind::cpu_op) CHECK(e.variant != nullptr);
  }

  const prof::EventList averages = profiler.key_averages();
  // Sum of Self CPU = the footer = the top-level scopes' durations.
  int64_t top_level = 0, self_sum = 0;
  for (const Event& e : events)
    if (e.parent < 0) top_level += e.duration_ns();
  for (const prof::KeyAverage& row : averages.rows) {
    self_sum += row.self_cpu_time_total_ns;
    CHECK(row.self_cpu_time_total_ns <= row.cpu_time_total_ns);
    CHECK(row.count == 3);
  }
  CHECK(self_sum == top_level);
  CHECK(averages.self_cpu_time_total_ns() == top_level);
  const prof::KeyAverage* matmul = averages.find("ts::matmul");
  const prof::KeyAverage* mm = averages.find("ts::mm");
  REQUIRE(matmul != nullptr);
  REQUIRE(mm != nullptr);
  CHECK(matmul->cpu_time_total_ns - matmul->self_cpu_time_total_ns == mm->cpu_time_total_ns);
  const std::string table = averages.table("cpu_time_total");
  CHECK(table.find("matmul_add") < table.find("ts::mm"));  // totals include children
  CHECK(table.find(fmt::format("Self CPU time total: {}\n", prof::format_time(static_cast<double>(top_level) / 1000))) !=
        std::string::npos);
  CHECK(table.find("100.00%") != std::string::npos);  // matmul_add's CPU total is all of it
}

TEST_CASE("profiler nesting: an exception inside nested scopes leaves the event tree well formed") {
  const ts::Tensor a = ts::ones({4, 3}), b = ts::ones({4, 3});
  prof::Profiler profiler;
  {
    prof::ProfilerGuard guard(profiler);
    auto outer = prof::record_function("outer");
    try {
      auto inner = prof::record_function("inner");
      ts::mm(a, b);  // 4x3 @ 4x3: throws inside its scope
      FAIL("mm should have thrown");
    } catch (const ts::Error&) {
    }
    try {
      auto inner = prof::record_function("inner2");
      ts::matmul(ts::ones({2, 2}), ts::ones({3, 3}));  // throws in prepare, inside matmul's scope
    } catch (const ts::Error&) {
    }
    ts::add(a, b);  // after the throws: a child of `outer`, not of a dead scope
  }
  const auto& events = profiler.events();
  check_tree(events);
  for (const Event& e : events) {
    if (e.name == "ts::add") CHECK(events[static_cast<size_t>(e.parent)].name == "outer");
    if (e.name == "ts::mm") {
      CHECK(events[static_cast<size_t>(e.parent)].name == "inner");
      CHECK(e.variant == nullptr);  // it threw before a variant ran
    }
    if (e.name == "inner" || e.name == "inner2") CHECK(events[static_cast<size_t>(e.parent)].name == "outer");
  }
  CHECK(count_named(events, "ts::mm") == 1);
  CHECK(count_named(events, "ts::matmul") == 1);
}

TEST_CASE("profiler threads: each thread's scopes land on its own lane, nested per thread") {
  constexpr int kThreads = 4, kOps = 50;
  prof::Profiler profiler;
  {
    prof::ProfilerGuard guard(profiler);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([t] {
        const ts::Tensor a = ts::ones({16});
        auto scope = prof::record_function(fmt::format("worker {}", t));
        for (int i = 0; i < kOps; ++i) ts::neg(a);
      });
    ts::neg(ts::ones({2}));  // the main thread too
    for (auto& thread : threads) thread.join();
  }
  const auto& events = profiler.events();
  check_tree(events);
  std::set<int64_t> tids;
  for (const Event& e : events) {
    if (e.name != "ts::neg") continue;
    tids.insert(e.tid);
    if (e.parent >= 0) CHECK(events[static_cast<size_t>(e.parent)].name.starts_with("worker "));
  }
  CHECK(tids.size() == kThreads + 1);
  CHECK(count_named(events, "ts::neg") == kThreads * kOps + 1);
  CHECK(profiler.recording().threads.size() == kThreads + 1);
  CHECK(profiler.dropped_events() == 0);
}

TEST_CASE("profiler start/stop many times: each recording holds its own window") {
  const ts::Tensor a = ts::ones({2});
  prof::Profiler profiler;
  uint64_t last_id = 0;
  for (int i = 0; i < 50; ++i) {
    profiler.start();
    ts::neg(a);
    profiler.stop();
    REQUIRE(profiler.events().size() == 1);
    CHECK(profiler.events()[0].id > last_id);
    last_id = profiler.events()[0].id;
  }
  ts::neg(a);  // not recording
  CHECK(profiler.events().size() == 1);
  CHECK_FALSE(prof::is_recording());
}

TEST_CASE("profiler: one profiler records at a time") {
  prof::Profiler first, second;
  first.start();
  CHECK_THROWS_AS(second.start(), ts::Error);
  CHECK_FALSE(second.running());
  first.stop();
  second.start();  // now it may
  second.stop();
}

TEST_CASE("profiler bound: events past max_events_per_thread are dropped and reported") {
  const ts::Tensor a = ts::ones({2});
  prof::ProfilerConfig config;
  config.max_events_per_thread = 10;
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < 25; ++i) ts::neg(a);
  }
  CHECK(profiler.events().size() == 10);
  CHECK(profiler.dropped_events() == 15);
  const std::string table = profiler.key_averages().table();
  CHECK(table.find("Dropped events: 15 (a thread's buffer reached max_events_per_thread = 10;") != std::string::npos);
  CHECK(prof::chrome_trace_json(profiler.recording(), "t.json").find("\"dropped_events\": 15,") != std::string::npos);
}

TEST_CASE("profiler memory: allocations charged to the innermost scope, memory events kept") {
  const ts::Tensor a = ts::ones({64, 64}), b = ts::ones({64, 64});
  prof::ProfilerConfig config;
  config.profile_memory = true;
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    auto scope = prof::record_function("block");
    const ts::Tensor c = ts::add(a, b);  // one 16 KiB output, freed at the end of the block
  }
  const prof::EventList averages = profiler.key_averages();
  const prof::KeyAverage* add = averages.find("ts::add");
  const prof::KeyAverage* block = averages.find("block");
  REQUIRE(add != nullptr);
  REQUIRE(block != nullptr);
  CHECK(add->self_cpu_memory_usage == 64 * 64 * 4);
  CHECK(block->cpu_memory_usage == 0);  // allocated in the add, freed in the block
  CHECK(block->self_cpu_memory_usage == -64 * 64 * 4);
  int allocations = 0;
  for (const Event& e : profiler.events())
    if (e.kind == EventKind::memory && e.bytes == 64 * 64 * 4) ++allocations;
  CHECK(allocations == 1);
  CHECK(averages.table().find("16.00 KB") != std::string::npos);
}

TEST_CASE("profiler with_stack: ops carry the user's line, ops inside ops inherit it") {
  const ts::Tensor x = ts::ones({4, 4});
  prof::ProfilerConfig config;
  config.with_stack = true;
  prof::Profiler profiler(config);
  uint32_t line = 0;
  {
    prof::ProfilerGuard guard(profiler);
    line = std::source_location::current().line() + 1;
    ts::matmul(x, x);
  }
  int seen = 0;
  for (const Event& e : profiler.events()) {
    if (e.name != "ts::matmul" && e.name != "ts::mm") continue;
    ++seen;
    REQUIRE(e.call_site.known());
    CHECK(e.call_site.line == line);
    CHECK(std::string_view(e.call_site.file).ends_with("test_profiler.cpp"));
  }
  CHECK(seen == 2);
  const std::string table = profiler.key_averages(false, 1).table();
  CHECK(table.find("Source Location") != std::string::npos);
  CHECK(table.find(fmt::format("test_profiler.cpp({})", line)) != std::string::npos);
}

TEST_CASE("profiler with_flops: GEMMs count 2*M*N*K, composites count the GEMM they run") {
  const ts::Tensor a = ts::ones({8, 16}), b = ts::ones({16, 4}), c = ts::ones({4});
  const ts::Tensor ba = ts::ones({3, 8, 16}), bb = ts::ones({3, 16, 4});
  const ts::Tensor w = ts::ones({4, 16});
  const ts::Tensor q = ts::ones({2, 5, 8}), k = ts::ones({2, 6, 8}), v = ts::ones({2, 6, 8});
  prof::ProfilerConfig config;
  config.with_flops = true;
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    ts::mm(a, b);
    ts::addmm(c, a, b);
    ts::bmm(ba, bb);
    ts::matmul(ba, bb);
    ts::linear(a, w, c);
    ts::scaled_dot_product_attention(q, k, v);
    ts::add(a, a);
  }
  const auto averages = profiler.key_averages();
  const auto flops = [&](const char* name) { return averages.find(name)->flops; };
  const int64_t gemm = 2 * 8 * 4 * 16;
  CHECK(flops("ts::addmm") == 2 * gemm);  // addmm and linear's addmm
  CHECK(flops("ts::linear") == gemm);
  CHECK(flops("ts::bmm") == 3 * gemm + 3 * gemm + 2 * (2 * 5 * 6 * 8) * 2);  // bmm, matmul's bmm, sdpa's two
  CHECK(flops("ts::matmul") == 3 * gemm + 2 * (2 * 5 * 6 * 8) * 2);
  CHECK(flops("ts::scaled_dot_product_attention") == 2 * 2 * 5 * 6 * (8 + 8));
  CHECK(flops("ts::add") == 8 * 16);  // PyTorch counts one FLOP per element of add's first input
  CHECK(averages.table().find("Total FLOPs") != std::string::npos);  // the unit of the smallest count (add's 128)
}

TEST_CASE("profiler record_shapes: dims, dtypes, strides and the scalars of the signature") {
  const ts::Tensor a = ts::ones({4, 3}, ts::DType::bf16);
  const ts::Tensor b = ts::ones({3}, ts::DType::bf16);
  prof::ProfilerConfig config;
  config.record_shapes = true;
  prof::Profiler profiler(config);
  {
    prof::ProfilerGuard guard(profiler);
    ts::add(a.t().t(), b, 2.0);
  }
  const Event* add = nullptr;
  for (const Event& e : profiler.events())
    if (e.name == "ts::add") add = &e;
  REQUIRE(add != nullptr);
  REQUIRE(add->inputs.size() == 3);  // self, other, alpha: aten::add.Tensor's arguments
  CHECK(add->inputs[0].shape == ts::Dims{4, 3});
  CHECK(add->inputs[0].strides == ts::Dims{3, 1});
  CHECK(add->inputs[0].dtype == ts::DType::bf16);
  CHECK(add->inputs[1].shape == ts::Dims{3});
  CHECK(add->inputs[2].kind == prof::InputMeta::Kind::scalar);
  CHECK(add->inputs[2].value == 2.0);
  CHECK(prof::format_shapes(add->inputs) == "[[4, 3], [3], []]");
  const std::string table = profiler.key_averages(/*group_by_input_shape=*/true).table();
  CHECK(table.find("Input Shapes") != std::string::npos);
  CHECK(table.find("[[4, 3], [3], []]") != std::string::npos);
}

TEST_CASE("profiler off: ops record nothing and RecordFunction is inert") {
  CHECK_FALSE(prof::is_recording());
  prof::Profiler profiler;
  {
    auto scope = prof::record_function("nobody listens");
    ts::neg(ts::ones({2}));
  }
  CHECK(profiler.events().empty());
  CHECK(profiler.key_averages().table().empty());  // PyTorch prints "" for no events
}
