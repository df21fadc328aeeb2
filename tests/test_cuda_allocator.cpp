// tests/test_cuda_allocator.cpp: the caching allocator (reuse, split and merge, stats,
// empty_cache, out of memory, memory events) and the device queries.
//
// Without a GPU these cases pass with a message saying why they did nothing,
// except the first, which checks the error a GPU-less machine gives.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ops/ops.h"
#include "tensor/allocator.h"
#include "tensor/cuda_allocator.h"
#include "tensor/cuda_device.h"

using ts::DType;
using ts::Tensor;

namespace {

const ts::Device kGpu = ts::kCUDA;

bool no_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

bool no_caching() {
  if (ts::cuda::caching_enabled()) return false;
  MESSAGE("skipped: TS_CUDA_NO_CACHING=1 turns the cache off");
  return true;
}

ts::AllocatorStats stats() { return ts::cuda::memory_stats(0); }

}  // namespace

TEST_CASE("cuda allocator: without a GPU, asking for a cuda tensor says why it cannot") {
  if (ts::cuda::is_available()) {
    CHECK(ts::cuda::unavailable_reason().empty());
    return;
  }
  try {
    (void)ts::empty({4}, {DType::f32, kGpu});
    FAIL("expected ts::Error");
  } catch (const ts::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("cannot use cuda:0") != std::string::npos);
    CHECK(what.find("Hint") != std::string::npos);
  }
}

TEST_CASE("cuda allocator: a freed block is reused for the same size class without cudaMalloc") {
  if (no_gpu() || no_caching()) return;
  ts::cuda::empty_cache();
  const ts::AllocatorStats s0 = stats();
  const void* first = nullptr;
  {
    const Tensor a = ts::empty({1000}, {DType::f32, kGpu});  // 4000 bytes round up to 4096
    first = a.data_ptr();
    const ts::AllocatorStats s1 = stats();
    CHECK(s1.allocated - s0.allocated == 4096);
    CHECK(s1.reserved >= s1.allocated);
    CHECK(s1.peak_allocated >= s1.allocated);
    CHECK(s1.num_allocs == s0.num_allocs + 1);  // one 2 MiB small-pool segment
  }
  const ts::AllocatorStats s2 = stats();
  CHECK(s2.allocated == s0.allocated);
  CHECK(s2.reserved == s0.reserved + (2 << 20));  // the segment stays cached
  {
    const Tensor b = ts::empty({1020}, {DType::f32, kGpu});  // 4080 bytes: the same 4096 block
    CHECK(b.data_ptr() == first);
    CHECK(stats().num_allocs == s2.num_allocs);
  }
  ts::cuda::empty_cache();
  CHECK(stats().reserved <= s0.reserved);
}

TEST_CASE("cuda allocator: blocks split from one segment merge again when freed") {
  if (no_gpu() || no_caching()) return;
  ts::cuda::empty_cache();
  const int64_t n = 300 * 1024 / 4;  // 300 KiB of f32: three fit in one 2 MiB small-pool segment
  Tensor x = ts::empty({n}, {DType::f32, kGpu});
  Tensor y = ts::empty({n}, {DType::f32, kGpu});
  const Tensor z = ts::empty({n}, {DType::f32, kGpu});
  const char* base = static_cast<const char*>(x.data_ptr());
  CHECK(static_cast<const char*>(y.data_ptr()) == base + 300 * 1024);
  CHECK(static_cast<const char*>(z.data_ptr()) == base + 600 * 1024);
  const int64_t allocs = stats().num_allocs;
  y = Tensor{};
  x = Tensor{};  // x merges with the free y: 600 KiB at base
  const Tensor w = ts::empty({2 * n}, {DType::f32, kGpu});
  CHECK(w.data_ptr() == base);  // best fit: the merged block, not the segment's tail
  CHECK(stats().num_allocs == allocs);
}

TEST_CASE("cuda allocator: large requests share 20 MiB segments up to 10 MiB, then get their own") {
  if (no_gpu() || no_caching()) return;
  ts::cuda::empty_cache();
  const ts::AllocatorStats s0 = stats();
  const Tensor a = ts::empty({5 << 20}, {DType::b8, kGpu});  // 5 MiB
  CHECK(stats().num_allocs == s0.num_allocs + 1);
  CHECK(stats().reserved == s0.reserved + (20 << 20));
  const Tensor b = ts::empty({5 << 20}, {DType::b8, kGpu});  // split from the same segment
  CHECK(stats().num_allocs == s0.num_allocs + 1);
  CHECK(static_cast<const char*>(b.data_ptr()) == static_cast<const char*>(a.data_ptr()) + (5 << 20));
  const Tensor c = ts::empty({11 << 20}, {DType::b8, kGpu});  // 11 MiB: a segment of its own, rounded to 2 MiB
  CHECK(stats().num_allocs == s0.num_allocs + 2);
  CHECK(stats().reserved == s0.reserved + (20 << 20) + (12 << 20));
}

TEST_CASE("cuda allocator: out of memory throws a clear ts::Error and leaves the allocator usable") {
  if (no_gpu()) return;
  const Tensor keep = ts::ones({1024}, {DType::f32, kGpu});
  const ts::AllocatorStats before = stats();
  try {
    (void)ts::empty({int64_t{1} << 48}, {DType::f32, kGpu});  // 1 PiB
    FAIL("expected ts::Error");
  } catch (const ts::Error& e) {
    const std::string what = e.what();
    MESSAGE(what);
    CHECK(what.find("CUDA out of memory") != std::string::npos);
    CHECK(what.find("tried to allocate") != std::string::npos);
    CHECK(what.find("reserved") != std::string::npos);
    CHECK(what.find("Hint") != std::string::npos);
  }
  CHECK(stats().allocated == before.allocated);
  const Tensor after = ts::full({1024}, 2.0, {DType::f32, kGpu});
  CHECK(ts::sum(ts::add(keep, after), 0).item<double>() == 3072.0);
}

namespace {
std::vector<ts::MemoryEvent> events;
void record(const ts::MemoryEvent& e) { events.push_back(e); }
}  // namespace

TEST_CASE("cuda allocator: allocations and frees reach the memory observer") {
  if (no_gpu()) return;
  events.clear();
  ts::set_memory_observer(record);
  { const Tensor t = ts::empty({256}, {DType::f32, kGpu}); }
  ts::set_memory_observer(nullptr);
  REQUIRE(events.size() == 2);
  CHECK(events[0].device == kGpu);
  CHECK(events[0].bytes == 1024);
  CHECK(events[1].bytes == -1024);
  CHECK(events[0].ptr == events[1].ptr);
  CHECK(events[0].total_allocated - events[1].total_allocated >= 1024);
  CHECK(events[0].total_reserved >= events[0].total_allocated);
}

TEST_CASE("cuda: device properties and synchronize") {
  if (no_gpu()) return;
  const ts::cuda::DeviceProperties p = ts::cuda::device_properties(0);
  MESSAGE(p.name, ": sm_", p.major, p.minor, ", ", p.multiprocessors, " SMs, ", p.total_memory >> 30, " GiB, L2 ",
          p.l2_cache_bytes >> 20, " MiB");
  CHECK(!p.name.empty());
  CHECK(p.multiprocessors > 0);
  CHECK(p.total_memory > 0);
  CHECK_NOTHROW(ts::cuda::synchronize());
  CHECK_THROWS_AS(ts::cuda::device_properties(ts::cuda::device_count()), ts::Error);
}
