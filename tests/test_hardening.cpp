// tests/test_hardening.cpp: the checked size arithmetic (tensor/shape.h), tensors that
// cannot exist, conversions that cannot be exact, the profiler's guards (schedules however
// they are built, one profiler never ending another's session, scopes ended out of order,
// callbacks that throw or stop), and ops, overrides, the generator and the profiler used
// from several threads at once.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ops/dispatch.h"
#include "ops/ops.h"
#include "profiler/op_scope.h"
#include "profiler/profiler.h"

using doctest::Contains;
using ts::Dims;
using ts::DType;
using ts::Tensor;
namespace prof = ts::profiler;

namespace {

constexpr int64_t kBig = int64_t{1} << 32;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

}  // namespace

TEST_CASE("checked shapes: checked_mul and checked_add are exact or throw naming the caller") {
  CHECK(ts::checked_mul(int64_t{1} << 31, int64_t{1} << 31, "t") == int64_t{1} << 62);
  CHECK(ts::checked_mul(-kBig, kBig / 2, "t") == std::numeric_limits<int64_t>::min());
  CHECK_THROWS_WITH_AS(ts::checked_mul(kBig, kBig, "my_op"), Contains("my_op: 4294967296 * 4294967296 overflows"),
                       ts::Error);
  CHECK(ts::checked_add(kMax - 1, 1, "t") == kMax);
  CHECK_THROWS_WITH_AS(ts::checked_add(kMax, 1, "my_op"), Contains("my_op:"), ts::Error);
}

TEST_CASE("checked shapes: checked_numel counts, rejects negative sizes and overflow, and 0 wins") {
  CHECK(ts::checked_numel({}, "t") == 1);
  CHECK(ts::checked_numel({2, 3, 4}, "t") == 24);
  CHECK(ts::checked_numel({kBig, kBig, 0}, "t") == 0);  // an empty tensor, however large its other dims
  CHECK(ts::checked_numel({int64_t{1} << 62, 2, 0}, "t") == 0);
  CHECK(ts::checked_numel({kMax}, "t") == kMax);
  CHECK_THROWS_WITH_AS(ts::checked_numel({kBig, kBig}, "view"),
                       Contains("view: shape [4294967296, 4294967296] has more elements than int64 can count"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::checked_numel({2, -3}, "empty"), Contains("empty: negative dimension -3 in shape [2, -3]"),
                       ts::Error);
  CHECK_THROWS_AS(ts::numel_of({kBig, kBig}), ts::Error);
  CHECK(ts::numel_of({kBig, kBig, 0}) == 0);
}

TEST_CASE("checked shapes: checked_nbytes multiplies by the element size without wrapping") {
  CHECK(ts::checked_nbytes({3, 5}, DType::f32, "t") == 60);
  CHECK(ts::checked_nbytes({int64_t{1} << 60}, DType::b8, "t") == int64_t{1} << 60);
  // 2^62 f32 elements are 2^64 bytes: the count fits, the bytes do not.
  CHECK_THROWS_WITH_AS(ts::checked_nbytes({int64_t{1} << 62}, DType::f32, "zeros"),
                       Contains("zeros: a tensor of shape [4611686018427387904] and dtype f32"), ts::Error);
}

TEST_CASE("checked shapes: storage_extent is one past the last element a view reaches") {
  CHECK(ts::storage_extent({3, 2}, {2, 1}, 0) == 6);
  CHECK(ts::storage_extent({2, 3}, {1, 2}, 0) == 6);        // a transpose
  CHECK(ts::storage_extent({3, 2}, {0, 1}, 4) == 6);        // expanded rows, from offset 4
  CHECK(ts::storage_extent({}, {}, 7) == 8);                // a 0-d tensor at element 7
  CHECK(ts::storage_extent({4, 0, 5}, {100, 100, 100}, 3) == 0);  // empty: reaches nothing
  CHECK(ts::storage_extent({3}, {-1}, 2) == 3);             // a negative stride, staying inside
  CHECK_THROWS_WITH_AS(ts::storage_extent({3}, {-1}, 1, "as_strided"), Contains("before the start of the storage"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::storage_extent({2}, {1}, -1, "as_strided"), Contains("negative storage offset -1"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::storage_extent({2, 2}, {1}, 0, "as_strided"), Contains("differ in length"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::storage_extent({kBig, kBig}, {kBig, 1}, 0, "as_strided"),
                       Contains("as_strided: shape [4294967296, 4294967296], strides [4294967296, 1]"), ts::Error);
  CHECK_THROWS_AS(ts::storage_extent({2}, {kMax}, kMax, "t"), ts::Error);
}

TEST_CASE("checked shapes: contiguous_strides throws instead of wrapping") {
  CHECK(ts::contiguous_strides({2, 3, 4}) == Dims{12, 4, 1});
  CHECK(ts::contiguous_strides({2, 0, 4}) == Dims{4, 4, 1});
  CHECK_THROWS_WITH_AS(ts::contiguous_strides({2, kBig, kBig, 0}), Contains("contiguous_strides"), ts::Error);
}

TEST_CASE("checked shapes: factories refuse tensors that cannot exist") {
  // 2^62 f32 elements: 2^64 bytes, which wrapped to a 0-byte buffer that the fill then overran.
  CHECK_THROWS_WITH_AS(ts::zeros({int64_t{1} << 62}), Contains("[4611686018427387904]"), ts::Error);
  CHECK_THROWS_WITH_AS(ts::empty({kBig, kBig}), Contains("[4294967296, 4294967296]"), ts::Error);
  CHECK_THROWS_AS(ts::ones({kBig, kBig}, DType::b8), ts::Error);
  CHECK_THROWS_AS(ts::randn({kBig, kBig}), ts::Error);
  CHECK_THROWS_AS(ts::full({kMax, 2}, 1.0), ts::Error);
  // Representable but far more than any machine has: the allocator says so.
  CHECK_THROWS_WITH_AS(ts::empty({int64_t{1} << 60}), Contains("out of memory"), ts::Error);
  CHECK(ts::zeros({kBig, kBig, 0}).numel() == 0);
}

TEST_CASE("checked shapes: views whose element count overflows throw") {
  // view's and reshape's infer_shape (ops/views/views.cpp) multiply the sizes with an overflow check.
  CHECK_THROWS_WITH_AS(ts::zeros({0}).view({kBig, kBig}), Contains("[4294967296, 4294967296]"), ts::Error);
  CHECK_THROWS_AS(ts::zeros({0}).reshape({kBig, kBig}), ts::Error);
  CHECK_THROWS_AS(ts::zeros({1}).expand({kBig, kBig}), ts::Error);
  CHECK(ts::zeros({0}).view({kBig, 0}).shape() == Dims{kBig, 0});
  CHECK(ts::zeros({1}).expand({kBig, 4}).numel() == 4 * kBig);  // stride 0: 16 G elements over 1 float
}

TEST_CASE("checked shapes: a Tensor view outside its storage cannot be made") {
  auto storage = std::make_shared<ts::Storage>(6 * sizeof(float), ts::kCPU);
  CHECK(Tensor(storage, {2, 3}, {3, 1}, 0, DType::f32).numel() == 6);
  CHECK(Tensor(storage, {0, 3}, {100, 1}, 50, DType::f32).numel() == 0);
  CHECK_THROWS_WITH_AS(Tensor(storage, {2, 3}, {3, 1}, 1, DType::f32),
                       Contains("reaches element 6, but its storage holds 6 f32 elements"), ts::Error);
  CHECK_THROWS_AS(Tensor(storage, {2, 3}, {3, 1}, 0, DType::i64), ts::Error);  // 48 bytes over 24
  CHECK_THROWS_AS(Tensor(storage, {2}, {1}, -1, DType::f32), ts::Error);
  CHECK_THROWS_AS(Tensor(storage, {-2}, {1}, 0, DType::f32), ts::Error);
  CHECK_THROWS_AS(Tensor(storage, {0}, {1}, kMax, DType::f32), ts::Error);  // data_ptr() would wrap
  CHECK_THROWS_AS(Tensor(nullptr, {1}, {1}, 0, DType::f32), ts::Error);
}

TEST_CASE("checked shapes: floats that do not fit in int64 convert to INT64_MIN, a defined value") {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  CHECK(ts::full({1}, INFINITY).item<int64_t>() == kMin);
  CHECK(ts::full({2}, NAN).to_vector<int64_t>() == std::vector<int64_t>{kMin, kMin});
  CHECK(ts::full({1}, 1e19).item<int64_t>() == kMin);
  CHECK(ts::full({1}, -9.2233720368547758e18).item<int64_t>() == kMin);  // -2^63 itself fits
  CHECK(ts::full({1}, 3.75).item<int64_t>() == 3);
  CHECK(ts::full({1}, -3.75, DType::bf16).item<int64_t>() == -3);
}

TEST_CASE("checked shapes: int64 tensors print exactly, past 2^53 too") {
  const Tensor x = ts::from_vector<int64_t>({kMax, std::numeric_limits<int64_t>::min(), (int64_t{1} << 53) + 1}, {3},
                                            DType::i64);
  CHECK(x.str() == "tensor([ 9223372036854775807, -9223372036854775808,     9007199254740993])");
}

// ---- the profiler -----------------------------------------------------------------------

TEST_CASE("profiler guards: a Schedule built as a struct is checked, naming the field") {
  prof::ProfilerConfig config;
  config.schedule = prof::Schedule{.active = 0};
  CHECK_THROWS_WITH_AS(prof::Profiler{config}, Contains("active must be > 0, got 0"), ts::Error);
  config.schedule = prof::Schedule{.warmup = 1, .active = -5};
  CHECK_THROWS_WITH_AS(prof::Profiler{config}, Contains("active must be > 0, got -5"), ts::Error);
  config.schedule = prof::Schedule{.wait = -1};
  CHECK_THROWS_WITH_AS(prof::Profiler{config}, Contains("wait must be >= 0, got -1"), ts::Error);
  config.schedule = prof::Schedule{.repeat = -2};
  CHECK_THROWS_WITH_AS(prof::Profiler{config}, Contains("repeat must be >= 0, got -2"), ts::Error);
  config.schedule = prof::Schedule{.skip_first = -3};
  CHECK_THROWS_WITH_AS(prof::Profiler{config}, Contains("skip_first must be >= 0, got -3"), ts::Error);
  config.schedule = prof::Schedule{.wait = kMax, .active = 1};
  CHECK_THROWS_WITH_AS(prof::Profiler{config}, Contains("overflows int64"), ts::Error);
  CHECK_THROWS_WITH_AS(prof::schedule(0, 1, 0), Contains("active must be > 0"), ts::Error);
  // Called directly, a bad schedule throws instead of dividing by zero.
  CHECK_THROWS_AS((prof::Schedule{.active = 0})(3), ts::Error);
  // Huge but valid schedules do not overflow on far steps.
  const prof::Schedule huge{.wait = kMax / 4, .warmup = kMax / 4, .active = kMax / 4, .repeat = 3,
                            .skip_first_wait = true};
  CHECK(huge(kMax - 1) == prof::ProfilerAction::none);
  CHECK(huge(0) == prof::ProfilerAction::warmup);
}

TEST_CASE("profiler guards: a profiler that fails to start recording never ends another's session") {
  // A: warm-up first, so start() records nothing yet; B then records.
  prof::ProfilerConfig config_a;
  config_a.schedule = prof::Schedule{.wait = 0, .warmup = 1, .active = 2};
  prof::Profiler a(config_a);
  prof::Profiler b;
  a.start();
  b.start();
  CHECK_THROWS_WITH_AS(a.step(), Contains("another profiler is already recording"), ts::Error);
  CHECK_FALSE(a.running());  // A gave up; B still records
  CHECK(b.running());
  a.stop();  // a no-op: A holds no session
  CHECK(prof::is_recording());
  ts::add(ts::ones({2}), ts::ones({2}));
  b.stop();
  CHECK(b.events().size() >= 1);
  int adds = 0;
  for (const prof::Event& e : b.events()) adds += e.name == "ts::add";
  CHECK(adds == 1);
  CHECK(a.events().empty());
  CHECK_THROWS_WITH_AS(a.step(), Contains("not started"), ts::Error);
}

TEST_CASE("profiler guards: start() while another records throws and leaves both as they were") {
  prof::Profiler b;
  b.start();
  prof::ProfilerConfig config_a;
  config_a.schedule = prof::Schedule{.wait = 1, .warmup = 1, .active = 1};  // would only wait at first
  prof::Profiler a(config_a);
  prof::Profiler c;  // would record at once
  CHECK_THROWS_WITH_AS(c.start(), Contains("another profiler is already recording"), ts::Error);
  CHECK_FALSE(c.running());
  a.start();  // waiting touches nothing
  CHECK_THROWS_AS(a.step(), ts::Error);  // its warm-up would set up tracing under B's recording
  CHECK_FALSE(a.running());
  CHECK(b.running());
  ts::mul(ts::ones({2}), 2.0);
  c.stop();
  a.stop();
  b.stop();
  int muls = 0;
  for (const prof::Event& e : b.events()) muls += e.name == "ts::mul";
  CHECK(muls == 1);
  // The step scopes of A (which never recorded) did not land in B's trace.
  for (const prof::Event& e : b.events()) CHECK(e.kind != prof::EventKind::profiler_step);
}

TEST_CASE("profiler guards: a throwing on_trace_ready stops the profiler, its own session kept") {
  prof::ProfilerConfig config;
  config.schedule = prof::Schedule{.wait = 0, .warmup = 1, .active = 1, .repeat = 1};
  config.on_trace_ready = [](prof::Profiler&) { ts::fail("trace sink is full"); };
  prof::Profiler p(config);
  p.start();
  p.step();  // warm-up -> record
  ts::add(ts::ones({3}), ts::ones({3}));
  CHECK_THROWS_WITH_AS(p.step(), Contains("trace sink is full"), ts::Error);
  CHECK_FALSE(p.running());
  CHECK_FALSE(prof::is_recording());
  int adds = 0;
  for (const prof::Event& e : p.events()) adds += e.name == "ts::add";
  CHECK(adds == 1);
  prof::Profiler next;  // nothing is left recording: the next profiler starts
  CHECK_NOTHROW(next.start());
  next.stop();
}

// ---- the profiler misused: scopes out of order, callbacks that throw anything or stop ------------

TEST_CASE("profiler misuse: a record_function ended before one opened inside it ends that one too") {
  prof::Profiler p;
  p.start();
  {
    prof::RecordFunction a("outer");
    prof::RecordFunction b("inner");
    a.end();  // out of order: "inner" is still open
    volatile double sink = 0;
    for (int i = 0; i < 200000; ++i) sink = sink + std::sqrt(static_cast<double>(i));  // time inside "inner" only
    b.end();  // ended already, with "outer": ignored
  }
  p.stop();
  const prof::Event* outer = nullptr;
  const prof::Event* inner = nullptr;
  for (const prof::Event& e : p.events()) {
    if (e.name == "outer") outer = &e;
    if (e.name == "inner") inner = &e;
  }
  REQUIRE(outer != nullptr);
  REQUIRE(inner != nullptr);
  CHECK(inner->end_ns == outer->end_ns);  // it ended with its parent, not after it
  CHECK(inner->start_ns >= outer->start_ns);
  CHECK(p.recording().scopes_ended_early == 1);
  CHECK_MESSAGE(p.key_averages().table().find("Scopes ended early: 1 (") != std::string::npos, p.key_averages().table());
  for (const prof::KeyAverage& row : p.key_averages().rows) CHECK_MESSAGE(row.self_cpu_time_total_ns >= 0, row.key);
}

TEST_CASE("profiler misuse: an on_trace_ready that throws what is not a std::exception becomes a ts::Error") {
  prof::ProfilerConfig config;
  config.schedule = prof::Schedule{.wait = 0, .warmup = 1, .active = 1, .repeat = 1};
  config.on_trace_ready = [](prof::Profiler&) { throw 42; };
  {
    prof::Profiler p(config);
    p.start();
    p.step();  // warm-up -> record
    CHECK_THROWS_WITH_AS(p.step(), Contains("not a std::exception"), ts::Error);
    CHECK_FALSE(p.running());
  }
  {  // at the end of a guard's scope: reported on stderr, the process goes on
    prof::ProfilerConfig unscheduled;
    unscheduled.on_trace_ready = [](prof::Profiler&) { throw std::string("a string"); };
    prof::Profiler p(unscheduled);
    { prof::ProfilerGuard guard(p); }
    CHECK_FALSE(p.running());
  }
  CHECK_FALSE(prof::is_recording());
}

TEST_CASE("profiler misuse: an on_trace_ready that calls stop() leaves no session behind") {
  prof::ProfilerConfig config;
  // repeat 0: without the stop(), the window after the first would start at once
  config.schedule = prof::Schedule{.wait = 0, .warmup = 1, .active = 1, .repeat = 0};
  int ready = 0;
  config.on_trace_ready = [&ready](prof::Profiler& p) {
    ++ready;
    p.stop();
  };
  {
    prof::Profiler p(config);
    p.start();
    p.step();  // warm-up -> record
    ts::add(ts::ones({3}), ts::ones({3}));
    p.step();  // record -> on_trace_ready, which stops
    CHECK(ready == 1);
    CHECK_FALSE(p.running());
    CHECK_FALSE(prof::is_recording());
    int adds = 0;
    for (const prof::Event& e : p.events()) adds += e.name == "ts::add";
    CHECK(adds == 1);
  }
  prof::Profiler next;  // nothing outlived the first profiler
  CHECK_NOTHROW(next.start());
  next.stop();
}

// ---- threads: ops, overrides, the generator, the environment and the profiler at once ------------

TEST_CASE("threads: randn from four threads gives every tensor its own values") {
  constexpr int kThreads = 4, kEach = 500;
  std::vector<std::vector<std::vector<float>>> drawn(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&drawn, t] {
      for (int i = 0; i < kEach; ++i) drawn[t].push_back(ts::randn({4}).to_vector<float>());
    });
  for (std::thread& t : threads) t.join();
  std::set<std::vector<float>> distinct;
  for (const auto& per_thread : drawn) distinct.insert(per_thread.begin(), per_thread.end());
  CHECK(distinct.size() == size_t{kThreads} * kEach);  // a race on the generator repeats draws
}

TEST_CASE("threads: TS_VARIANT reloaded while three threads dispatch mm") {
  const char* before = std::getenv("TS_VARIANT");
  const std::string saved = before != nullptr ? before : "";
  const Tensor a = ts::arange(16).reshape({4, 4});
  const std::vector<float> expected = ts::mm(a, a).to_vector<float>();
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      while (!done.load()) wrong += ts::mm(a, a).to_vector<float>() != expected;
    });
  for (int i = 0; i < 400; ++i) {
    setenv("TS_VARIANT", i % 2 == 0 ? "mm/cpu/ref" : "", 1);
    ts::reload_variant_environment();
  }
  done = true;
  for (std::thread& t : threads) t.join();
  setenv("TS_VARIANT", saved.c_str(), 1);
  ts::reload_variant_environment();
  CHECK(wrong.load() == 0);
}

TEST_CASE("threads: VariantOverride scopes destroyed out of order and on another thread") {
  auto a = std::make_unique<ts::VariantOverride>("mm/cpu/ref");
  auto b = std::make_unique<ts::VariantOverride>("add/cpu/ref");
  a.reset();  // before b, which was made after it
  CHECK(ts::add(ts::ones({2}), ts::ones({2})).to_vector<float>() == std::vector<float>{2, 2});
  b.reset();
  auto c = std::make_unique<ts::VariantOverride>("mm/cpu/ref");
  std::thread([&c] { c.reset(); }).join();  // removed from the stack of the thread that made it
  CHECK(ts::mm(ts::ones({2, 2}), ts::ones({2, 2})).to_vector<float>() == std::vector<float>{2, 2, 2, 2});
}

TEST_CASE("threads: start and stop while four threads run ops keep every event whole, in its window") {
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&done] {
      Tensor x = ts::ones({16});
      while (!done.load()) {
        prof::RecordFunction scope("work");
        x = ts::mul(ts::add(x, x), ts::ones({16}));
      }
    });
  int bad = 0, windows = 0;
  for (int i = 0; i < 60; ++i) {
    prof::ProfilerConfig config;
    config.record_shapes = i % 2 == 0;
    prof::Profiler p(config);
    p.start();
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    p.stop();
    const prof::Recording& r = p.recording();
    windows += !r.events.empty();
    for (const prof::Event& e : r.events) {
      const bool whole = e.end_ns >= e.start_ns && e.start_ns >= r.window_start_ns && e.end_ns <= r.window_end_ns;
      if (!whole && bad++ < 5) MESSAGE(e.name, " from ", e.start_ns, " to ", e.end_ns, " outside or reversed");
      if (e.parent >= 0) {
        const prof::Event& parent = r.events[static_cast<size_t>(e.parent)];
        if ((e.start_ns < parent.start_ns || e.end_ns > parent.end_ns) && bad++ < 5)
          MESSAGE(e.name, " is not inside its parent ", parent.name);
      }
    }
    for (const prof::KeyAverage& row : p.key_averages().rows)
      if (row.self_cpu_time_total_ns < 0 && bad++ < 5) MESSAGE(row.key, " has a negative Self CPU");
  }
  done = true;
  for (std::thread& t : threads) t.join();
  CHECK(bad == 0);
  CHECK(windows > 0);
}

// record_shapes keeps each op's inputs in one growing list: the cost per op must not grow with the
// recording. In one recording of 40000 ops, the time of the last 10000 against the first 10000
// (the fastest of three recordings each), not a wall-clock bound (a sanitizer build is 10x slower):
// the same when each op costs the same, 7x when an op's cost grows with the ops before it.
TEST_CASE("profiler record_shapes: the cost per op stays flat as the recording grows") {
  constexpr int kOps = 40000, kTimed = 10000;
  double first = INFINITY, last = INFINITY;
  for (int round = 0; round < 3; ++round) {
    prof::ProfilerConfig config;
    config.record_shapes = true;
    prof::Profiler p(config);
    Tensor x = ts::ones({4});
    p.start();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kOps; ++i) {
      if (i == kTimed) first = std::min(first, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (i == kOps - kTimed) t0 = std::chrono::steady_clock::now();
      x = ts::add(x, x);
    }
    last = std::min(last, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    p.stop();
  }
  MESSAGE("record_shapes, 40000 adds: the first 10000 in ", first, " s, the last 10000 in ", last, " s");
  CHECK(last / first < 4);
}
