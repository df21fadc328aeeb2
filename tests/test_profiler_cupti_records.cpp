// tests/test_profiler_cupti_records.cpp: the profiler's CUDA side on records made by hand, no GPU needed.
//
// CUPTI's records reach the profiler as plain structs (profiler/cupti_records.h);
// these cases build such records and check the Events they become: launch calls
// under the op that made them, GPU work charged to its op, user-scope spans on
// each stream, the capture window, sync devices, the clock offset; then the
// kernel footprint (occupancy) on an H200's properties, which API calls are kept,
// and how a failed CUDA call of the profiler reaches the table and the trace.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/chrome_trace.h"
#include "profiler/cupti_buffers.h"
#include "profiler/cuda_call_check.h"
#include "profiler/cupti_api_selection.h"
#include "profiler/cupti_records.h"
#include "profiler/kernel_footprint.h"
#include "profiler/key_averages.h"
#include "tests/support/synthetic_events.h"

namespace prof = ts::profiler;
namespace cupti = ts::profiler::cupti;
using prof::EventKind;

namespace {

// A CPU scope as the collector records it.
prof::Event scope(EventKind kind, std::string_view name, int64_t start, int64_t end, uint64_t id, int32_t parent,
                  int64_t tid = 1) {
  return prof::Event{.kind = kind, .name = name, .start_ns = start, .end_ns = end, .id = id, .tid = tid,
                     .parent = parent};
}

cupti::ApiRecord launch_call(std::string_view name, int64_t start, int64_t end, uint32_t correlation, int64_t tid = 1,
                             bool driver = false) {
  return {.start = start, .end = end, .correlation = correlation, .cbid = driver ? 652u : 211u, .tid = tid,
          .name = name, .driver = driver};
}

cupti::GpuRecord kernel(std::string_view name, int64_t start, int64_t end, uint32_t correlation, uint32_t stream = 7) {
  return {.kind = EventKind::kernel, .start = start, .end = end, .device = 0, .context = 1, .stream = stream,
          .correlation = correlation, .name = name, .mangled = name,
          .launch = {.grid = {2, 1, 1}, .block = {128, 1, 1}, .registers_per_thread = 16}};
}

// The events of a kind, in the order they were appended.
std::vector<prof::Event> of_kind(const prof::Recording& rec, EventKind kind) {
  std::vector<prof::Event> out;
  std::copy_if(rec.events.begin(), rec.events.end(), std::back_inserter(out),
               [kind](const prof::Event& e) { return e.kind == kind; });
  return out;
}

// An H200 as cudaGetDeviceProperties describes it (the fields the occupancy calculator reads).
cudaDeviceProp h200() {
  cudaDeviceProp p{};
  std::string_view("NVIDIA H200").copy(p.name, sizeof p.name - 1);
  p.major = 9;
  p.minor = 0;
  p.multiProcessorCount = 132;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsPerMultiProcessor = 2048;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.warpSize = 32;
  p.sharedMemPerBlock = 49152;
  p.sharedMemPerMultiprocessor = 233472;
  p.sharedMemPerBlockOptin = 232448;
  p.reservedSharedMemPerBlock = 1024;
  p.totalGlobalMem = size_t{143771} << 20;
  return p;
}

}  // namespace

TEST_CASE("profiler cupti records: launch calls join their op, kernels are charged to it, scopes get GPU spans") {
  prof::Recording rec;
  rec.window_start_ns = 500;
  rec.window_end_ns = 10'000;
  rec.events = {scope(EventKind::user_annotation, "matmul_add", 1000, 9000, /*id=*/1, -1),  // 0
                scope(EventKind::cpu_op, "ts::mm", 2000, 5000, /*id=*/2, 0),                 // 1
                scope(EventKind::cpu_op, "ts::add", 6000, 8000, /*id=*/3, 0)};               // 2
  cupti::KeptRecords kept;
  kept.api = {launch_call("cuLaunchKernelEx", 2600, 2900, 10, 1, /*driver=*/true),  // made by the runtime call below
              launch_call("cudaLaunchKernel", 2500, 3000, 10),
              launch_call("cudaLaunchKernel", 6500, 7000, 11),
              launch_call("cudaLaunchKernel", 6500, 7000, 12, /*tid=*/2)};  // another thread: not ts::add's child
  kept.gpu = {kernel("gemm", 3500, 4000, 10), kernel("add", 7500, 8500, 11), kernel("other", 7600, 7700, 12, 9)};
  kept.op_of = {{10, 2}, {11, 3}, {12, 3}};
  kept.annotation_of = {{10, 1}, {11, 1}};
  cupti::append_cupti_events(kept, {}, rec);

  const std::vector<prof::Event> calls = of_kind(rec, EventKind::cuda_runtime);
  REQUIRE(calls.size() == 3);
  CHECK(of_kind(rec, EventKind::cuda_driver).empty());  // the runtime call wins its correlation
  CHECK(calls[0].correlation == 10);
  CHECK(calls[0].parent == 1);
  CHECK(calls[0].id == 2);
  CHECK(calls[0].cbid == 211);
  CHECK(calls[1].parent == 2);
  CHECK(calls[2].tid == 2);
  CHECK(calls[2].parent == -1);  // a parent on another thread's lane would break nesting
  CHECK(calls[2].id == 3);       // still charged to the op

  const std::vector<prof::Event> kernels = of_kind(rec, EventKind::kernel);
  REQUIRE(kernels.size() == 3);
  CHECK(kernels[0].name == "gemm");
  CHECK(kernels[0].id == 2);
  CHECK(kernels[0].stream == 7);
  CHECK(kernels[0].tid == 7);
  CHECK(kernels[1].id == 3);
  CHECK(kernels[0].kernel_info.grid[0] == 0);  // no device properties given: no footprint
  CHECK(rec.device_activity.unmatched_records == 0);
  CHECK(rec.device_activity.launch_order_violations == 0);

  // One span per (device, stream) of the scope's work: stream 7 from gemm's start to add's end.
  const std::vector<prof::Event> spans = of_kind(rec, EventKind::gpu_user_annotation);
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].name == "matmul_add");
  CHECK(spans[0].id == 1);
  CHECK(spans[0].start_ns == 3500);
  CHECK(spans[0].end_ns == 8500);
  CHECK(spans[0].stream == 7);
  CHECK(rec.devices.empty());
}

TEST_CASE("profiler cupti records: the window keeps its own work, counts the unmatched and the out-of-order") {
  prof::Recording rec;
  rec.window_start_ns = 1000;
  rec.window_end_ns = 5000;
  cupti::KeptRecords kept;
  kept.api = {launch_call("cudaLaunchKernel", 900, 950, 20),     // a warmup step's launch ...
              launch_call("cudaLaunchKernel", 2000, 2100, 21)};
  kept.gpu = {kernel("warmup", 1100, 1200, 20),  // ... whose kernel ran inside the window: dropped
              kernel("early", 800, 900, 22),     // no launch, before the window: dropped
              kernel("orphan", 3000, 3100, 23),  // no launch, in the window: kept and counted
              kernel("ahead", 1900, 2500, 21)};  // starts before its launch call: kept and counted
  kept.overhead = {{.start = 500, .end = 600, .name = "Buffer Flush"}, {.start = 4000, .end = 3900, .name = "Resource"}};
  cupti::append_cupti_events(kept, {}, rec);

  const std::vector<prof::Event> kernels = of_kind(rec, EventKind::kernel);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].name == "ahead");
  CHECK(kernels[0].start_ns == 2000);  // moved 100 ns later, to its launch call's start
  CHECK(kernels[1].name == "orphan");
  CHECK(kernels[1].start_ns == 3100);  // every GPU record moves with it
  CHECK(rec.device_activity.unmatched_records == 1);
  CHECK(rec.device_activity.launch_order_violations == 1);
  CHECK(rec.device_activity.gpu_clock_shift_ns == 100);
  CHECK(of_kind(rec, EventKind::cuda_runtime).size() == 1);
  const std::vector<prof::Event> overhead = of_kind(rec, EventKind::overhead);
  REQUIRE(overhead.size() == 1);
  CHECK(overhead[0].name == "Resource");
  CHECK(overhead[0].end_ns == overhead[0].start_ns);  // an end before the start is clamped
}

// CUPTI's clock can put a whole session's GPU work a few microseconds early (the same offset for every
// record); the profiler moves it later by the smallest amount that puts each record after its launch.
TEST_CASE("profiler cupti records: GPU work timed before its launch call moves later, by the least that fixes all") {
  prof::Recording rec;
  rec.use_cuda = true;
  rec.window_start_ns = 0;
  rec.window_end_ns = 100'000;
  cupti::KeptRecords kept;
  kept.api = {launch_call("cudaLaunchKernel", 10'000, 10'500, 1), launch_call("cudaLaunchKernel", 20'000, 20'500, 2),
              launch_call("cudaMemcpyAsync", 30'000, 30'400, 3), launch_call("cudaDeviceSynchronize", 40'000, 45'000, 4)};
  cupti::GpuRecord copy = kernel("Memcpy DtoH (Device -> Pinned)", 29'000, 29'800, 3);
  copy.kind = EventKind::memcpy;
  cupti::GpuRecord sync = kernel("Context Sync", 40'100, 44'900, 4);
  sync.kind = EventKind::cuda_sync;
  kept.gpu = {kernel("a", 9'000, 9'600, 1),    // 1000 ns before its launch call
              kernel("b", 21'000, 22'000, 2),  // 1000 ns after it
              copy,                            // 1000 ns before its call too
              sync};                           // the CPU's own wait: never moved
  cupti::append_cupti_events(kept, {}, rec);

  const prof::DeviceActivityInfo& d = rec.device_activity;
  CHECK(d.launch_order_violations == 2);
  CHECK(d.gpu_clock_shift_ns == 1000);
  std::map<std::string, prof::Event> by_name;
  for (const prof::Event& e : rec.events) by_name.emplace(std::string(e.name), e);
  CHECK(by_name.at("a").start_ns == 10'000);
  CHECK(by_name.at("a").end_ns == 10'600);  // durations kept
  CHECK(by_name.at("b").start_ns == 22'000);
  CHECK(by_name.at("Memcpy DtoH (Device -> Pinned)").start_ns == 30'000);
  CHECK(by_name.at("Context Sync").start_ns == 40'100);

  rec.device_activity.source = "cupti";
  const std::string table = prof::key_averages(rec).table();
  CHECK(table.find("Clock: CUPTI's clock put 2 GPU activities before their launch call began; every GPU time was "
                    "moved 1.000 us later to keep each after its launch") != std::string::npos);
  CHECK(table.find("Dropped CUDA records") == std::string::npos);
  rec.device_activity.buffers_refused = 3;
  CHECK(prof::key_averages(rec).table().find("Dropped CUDA records: 0 by CUPTI, 3 buffer requests refused (the pool "
                                             "of CUPTI buffers, 128 MiB, was full)") != std::string::npos);
  const nlohmann::json trace = nlohmann::json::parse(prof::chrome_trace_json(rec, "clock"));
  CHECK(trace["cuda_activity"]["gpu_clock_shift_ns"] == 1000);
  CHECK(trace["cuda_activity"]["launch_order_violations"] == 2);
}

// Between the kernels of a CUDA graph replay, CUPTI may time a kernel as starting a little before the
// one before it on the stream ended: the earlier one then ends where the next began, counted.
TEST_CASE("profiler cupti records: work timed as overlapping the piece before it on its stream ends that piece") {
  prof::Recording rec;
  rec.use_cuda = true;
  rec.window_start_ns = 0;
  rec.window_end_ns = 100'000;
  cupti::KeptRecords kept;
  kept.api = {launch_call("cudaGraphLaunch", 1'000, 2'000, 1)};
  cupti::GpuRecord other_stream = kernel("c", 9'000, 9'900, 1);
  other_stream.stream = 8;
  kept.gpu = {kernel("a", 5'000, 9'160, 1), kernel("b", 9'000, 12'000, 1),  // b begins 160 ns before a ends
              kernel("d", 12'000, 13'000, 1), other_stream};                 // d right after b; c elsewhere
  cupti::append_cupti_events(kept, {}, rec);
  const prof::DeviceActivityInfo& d = rec.device_activity;
  CHECK(d.stream_overlaps_trimmed == 1);
  CHECK(d.stream_overlap_max_ns == 160);
  std::map<std::string, prof::Event> by_name;
  for (const prof::Event& e : rec.events) by_name.emplace(std::string(e.name), e);
  CHECK(by_name.at("a").end_ns == 9'000);
  CHECK(by_name.at("b").end_ns == 12'000);
  CHECK(by_name.at("c").end_ns == 9'900);  // another stream's work may overlap
  rec.device_activity.source = "cupti";
  CHECK(prof::key_averages(rec).table().find("Clock: CUPTI timed 1 GPU records as starting before the one before them "
                                             "on their stream ended; each earlier one ends where the next began, a "
                                             "sync that began inside one starts where it ended (at most 0.160 us "
                                             "taken off one)") != std::string::npos);
  const nlohmann::json trace = nlohmann::json::parse(prof::chrome_trace_json(rec, "overlap"));
  CHECK(trace["cuda_activity"]["stream_overlaps_trimmed"] == 1);
}

// cudaStreamSynchronize right after a graph launch begins while the replay's last kernel still runs on
// the stream, and ends after it: on the stream's lane the sync then starts where that kernel ended.
TEST_CASE("profiler cupti records: a stream sync that began inside its stream's work starts where that work ended") {
  prof::Recording rec;
  rec.use_cuda = true;
  rec.window_start_ns = 0;
  rec.window_end_ns = 100'000;
  cupti::KeptRecords kept;
  kept.api = {launch_call("cudaGraphLaunch", 1'000, 2'000, 1),
              launch_call("cudaStreamSynchronize", 5'500, 9'000, 2),
              launch_call("cudaLaunchKernel", 10'000, 10'500, 3),
              launch_call("cudaStreamSynchronize", 10'600, 13'000, 4),
              launch_call("cudaLaunchKernel", 13'000, 13'050, 5),
              launch_call("cudaDeviceSynchronize", 13'100, 16'000, 6)};
  // CUPTI names only a sync's context: context 5 ran its work on device 1, so the syncs belong there.
  const auto on_device_1 = [](cupti::GpuRecord g) {
    g.device = 1;
    g.context = 5;
    return g;
  };
  const auto sync = [](std::string_view name, int64_t start, int64_t end, uint32_t correlation, uint32_t stream) {
    return cupti::GpuRecord{.kind = EventKind::cuda_sync, .start = start, .end = end, .context = 5, .stream = stream,
                            .correlation = correlation, .name = name};
  };
  kept.gpu = {on_device_1(kernel("first", 3'000, 5'000, 1)),
              on_device_1(kernel("last", 5'000, 6'000, 1)),    // the replay's last kernel ...
              sync("Stream Sync", 5'600, 8'900, 2, 7),          // ... still running when the wait began
              on_device_1(kernel("eager", 11'000, 12'000, 3)),
              sync("Stream Sync", 10'700, 12'900, 4, 7),        // contains its kernel: nests as it is
              on_device_1(kernel("long", 14'000, 15'000, 5)),
              sync("Context Sync", 14'500, 15'900, 6, 0xffffffffu)};  // the device's lane, not the stream's
  cupti::append_cupti_events(kept, {}, rec);

  const prof::DeviceActivityInfo& d = rec.device_activity;
  CHECK(d.stream_overlaps_trimmed == 1);
  CHECK(d.stream_overlap_max_ns == 400);
  std::map<std::string, prof::Event> by_name;
  for (const prof::Event& e : rec.events) by_name.emplace(std::string(e.name), e);
  CHECK(by_name.at("last").start_ns == 5'000);  // the kernel keeps its CUDA time
  CHECK(by_name.at("last").end_ns == 6'000);
  CHECK(by_name.at("first").end_ns == 5'000);
  CHECK(by_name.at("cudaStreamSynchronize").start_ns == 5'500);  // the CPU's call keeps its true span
  const std::vector<prof::Event> syncs = of_kind(rec, EventKind::cuda_sync);
  REQUIRE(syncs.size() == 3);
  CHECK(syncs[0].correlation == 2);
  CHECK(syncs[0].device == 1);
  CHECK(syncs[0].start_ns == 6'000);  // where "last" ended
  CHECK(syncs[0].end_ns == 8'900);
  CHECK(syncs[1].correlation == 4);
  CHECK(syncs[1].start_ns == 10'700);
  CHECK(syncs[1].end_ns == 12'900);
  CHECK(syncs[2].stream == -1);
  CHECK(syncs[2].start_ns == 14'500);
  const nlohmann::json trace = nlohmann::json::parse(prof::chrome_trace_json(rec, "sync"));
  CHECK(trace["cuda_activity"]["stream_overlaps_trimmed"] == 1);
}

TEST_CASE("profiler cupti records: a sync finds its device through its context and is no scope's GPU work") {
  prof::Recording rec;
  rec.window_start_ns = 0;
  rec.window_end_ns = 10'000;
  rec.events = {scope(EventKind::user_annotation, "step", 100, 9000, /*id=*/1, -1)};
  cupti::KeptRecords kept;
  kept.api = {launch_call("cudaLaunchKernel", 200, 300, 30), launch_call("cudaDeviceSynchronize", 400, 2000, 31),
              launch_call("cudaStreamSynchronize", 2100, 2200, 32)};
  cupti::GpuRecord work = kernel("k", 500, 1500, 30);
  work.device = 1;
  work.context = 5;
  kept.gpu = {work,
              {.kind = EventKind::cuda_sync, .start = 400, .end = 2000, .context = 5, .stream = 0xffffffffu,
               .correlation = 31, .name = "Context Sync"},
              {.kind = EventKind::cuda_sync, .start = 2100, .end = 2200, .context = 9, .stream = 7,
               .correlation = 32, .name = "Stream Sync"}};
  kept.annotation_of = {{30, 1}, {31, 1}, {32, 1}};
  cupti::append_cupti_events(kept, {.current_device = 2}, rec);

  const std::vector<prof::Event> syncs = of_kind(rec, EventKind::cuda_sync);
  REQUIRE(syncs.size() == 2);
  CHECK(syncs[0].name == "Context Sync");
  CHECK(syncs[0].device == 1);   // its context ran the kernel on device 1
  CHECK(syncs[0].stream == -1);  // CUPTI's "no stream": the device lane
  CHECK(syncs[0].tid == -1);
  CHECK(syncs[1].device == 2);   // a context with no recorded work: the current device
  const std::vector<prof::Event> spans = of_kind(rec, EventKind::gpu_user_annotation);
  REQUIRE(spans.size() == 1);  // the waits do not stretch the scope's span
  CHECK(spans[0].start_ns == 500);
  CHECK(spans[0].end_ns == 1500);
  CHECK(spans[0].device == 1);
}

TEST_CASE("profiler cupti records: a measured clock offset moves every CUDA event, spans and window tests included") {
  prof::Recording rec;
  rec.window_start_ns = 10'000;
  rec.window_end_ns = 20'000;
  rec.events = {scope(EventKind::user_annotation, "step", 10'500, 19'000, /*id=*/1, -1),
                scope(EventKind::cpu_op, "ts::add", 11'000, 13'000, /*id=*/2, 0)};
  cupti::KeptRecords kept;  // CUPTI's clock runs 10,000 ns behind the profiler's
  kept.api = {launch_call("cudaLaunchKernel", 1500, 2000, 40)};
  kept.gpu = {kernel("add", 2500, 3000, 40)};
  kept.op_of = {{40, 2}};
  kept.annotation_of = {{40, 1}};
  const std::vector<cudaDeviceProp> devices{h200()};
  cupti::append_cupti_events(kept, {.clock_offset_ns = 10'000, .devices = devices}, rec);

  const std::vector<prof::Event> calls = of_kind(rec, EventKind::cuda_runtime);
  REQUIRE(calls.size() == 1);  // inside the window once on the profiler's clock
  CHECK(calls[0].start_ns == 11'500);
  CHECK(calls[0].parent == 1);
  const std::vector<prof::Event> kernels = of_kind(rec, EventKind::kernel);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].start_ns == 12'500);
  CHECK(kernels[0].kernel_info.block[0] == 128);  // footprint from device 0's properties
  const std::vector<prof::Event> spans = of_kind(rec, EventKind::gpu_user_annotation);
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].start_ns == 12'500);
  CHECK(spans[0].end_ns == 13'000);
  REQUIRE(rec.devices.size() == 1);
  CHECK(rec.devices[0].name == "NVIDIA H200");
  CHECK(rec.devices[0].num_sms == 132);
  CHECK(rec.devices[0].shared_mem_per_block_optin == 232448);
}

TEST_CASE("profiler kernel footprint: blocks, warps and occupancy on an H200") {
  const cudaDeviceProp device = h200();
  SUBCASE("a full grid of small blocks fills every thread slot") {
    const prof::KernelInfo k =
        prof::kernel_footprint({.grid = {132 * 16, 1, 1}, .block = {256, 1, 1}, .registers_per_thread = 32}, device);
    CHECK(k.blocks_per_sm == doctest::Approx(16));
    CHECK(k.warps_per_sm == doctest::Approx(128));
    CHECK(k.occupancy_percent == 100);  // 8 resident blocks of 256 threads = 2048
    CHECK(k.registers_per_thread == 32);
    CHECK(k.grid[0] == 132 * 16);
  }
  SUBCASE("registers bound it: 128 per thread leave room for 2 blocks of 256") {
    const prof::KernelInfo k =
        prof::kernel_footprint({.grid = {132 * 16, 1, 1}, .block = {256, 1, 1}, .registers_per_thread = 128}, device);
    CHECK(k.occupancy_percent == 25);
  }
  SUBCASE("a small grid: half a block per SM") {
    const prof::KernelInfo k =
        prof::kernel_footprint({.grid = {66, 1, 1}, .block = {16, 16, 1}, .registers_per_thread = 32}, device);
    CHECK(k.blocks_per_sm == doctest::Approx(0.5));
    CHECK(k.occupancy_percent == 6);  // 0.5 * 256 / 2048 = 6.25%
  }
  SUBCASE("shared memory past the default 48 KiB per block reads as 0%, as in PyTorch's traces") {
    const prof::KernelInfo k = prof::kernel_footprint(
        {.grid = {132, 1, 1}, .block = {384, 1, 1}, .registers_per_thread = 168, .dynamic_shared_memory = 213188},
        device);
    CHECK(k.shared_memory == 213188);
    CHECK(k.blocks_per_sm == doctest::Approx(1));
    CHECK(k.occupancy_percent == 0);
  }
  SUBCASE("an empty block: geometry only") {
    const prof::KernelInfo k = prof::kernel_footprint({.grid = {1, 1, 1}, .block = {0, 1, 1}}, device);
    CHECK(k.blocks_per_sm == 0);
    CHECK(k.occupancy_percent == 0);
  }
}

TEST_CASE("profiler cupti api selection: launches, copies and sets are kept, and per-op queries are not") {
  CHECK(cupti::keeps_api_call(false, "cudaLaunchKernel"));
  CHECK(cupti::keeps_api_call(false, "cudaDeviceSynchronize"));
  CHECK(cupti::keeps_api_call(false, "cudaMemcpyAsync"));
  CHECK_FALSE(cupti::keeps_api_call(false, "cudaGetLastError"));
  CHECK_FALSE(cupti::keeps_api_call(false, "cudaGetDevice"));
  CHECK_FALSE(cupti::keeps_api_call(false, "cudaStreamIsCapturing"));
  CHECK(cupti::keeps_api_call(true, "cuLaunchKernelEx"));
  CHECK(cupti::keeps_api_call(true, "cuMemsetD32Async"));
  CHECK(cupti::keeps_api_call(true, "cuMemcpyDtoHAsync"));
  CHECK_FALSE(cupti::keeps_api_call(true, "cuCtxGetCurrent"));
  CHECK_FALSE(cupti::keeps_api_call(true, "cuFuncGetAttribute"));
  CHECK(cupti::without_version_suffix("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
  CHECK(cupti::without_version_suffix("cuMemcpyDtoHAsync_v2") == "cuMemcpyDtoHAsync");
  CHECK(cupti::without_version_suffix("cudaMemcpy_vfoo") == "cudaMemcpy_vfoo");
  CHECK(cupti::without_version_suffix("cudaLaunchKernel") == "cudaLaunchKernel");
}

TEST_CASE("profiler cuda call check: a failed call is noted, not thrown, and reported in the table and the trace") {
  prof::DeviceActivityInfo drained;
  prof::detail::report_failed_calls(drained);  // start from an empty log

  CHECK(TS_PROFILER_CUDA_OK(cudaSuccess));
  CHECK(TS_CUPTI_OK(CUPTI_SUCCESS));
  CHECK_FALSE(TS_PROFILER_CUDA_OK(cudaErrorMemoryAllocation));
  CHECK_FALSE(TS_CUPTI_OK(CUPTI_ERROR_NOT_INITIALIZED));
  CHECK(TS_CUPTI_TRY(CUPTI_SUCCESS).empty());
  CHECK(TS_CUPTI_TRY(CUPTI_ERROR_INVALID_PARAMETER).find("CUPTI_ERROR_INVALID_PARAMETER failed") == 0);

  ts::testing::SyntheticEvents s(/*use_cuda=*/true);
  s.op("ts::add", 1000, 5000, -1);
  s.rec.device_activity.source = "cupti";
  prof::detail::report_failed_calls(s.rec.device_activity);
  const prof::DeviceActivityInfo& info = s.rec.device_activity;
  CHECK(info.failed_calls == 2);
  INFO(info.first_failed_call);
  CHECK(info.first_failed_call.starts_with("cudaErrorMemoryAllocation failed: cudaErrorMemoryAllocation: "));
  CHECK(info.first_failed_call.find("test_profiler_cupti_records.cpp:") != std::string::npos);

  prof::DeviceActivityInfo again;
  prof::detail::report_failed_calls(again);
  CHECK(again.failed_calls == 0);  // reported once

  const std::string table = prof::key_averages(s.rec).table();
  CHECK(table.find("Failed CUDA calls in the profiler: 2 (the first: cudaErrorMemoryAllocation failed: ") !=
        std::string::npos);
  const nlohmann::json trace = nlohmann::json::parse(prof::chrome_trace_json(s.rec, "t.json"));
  CHECK(trace["cuda_activity"]["failed_calls"] == 2);
  CHECK(trace["cuda_activity"]["first_failed_call"] == info.first_failed_call);
}

TEST_CASE("profiler cupti buffers: TS_CUPTI_BUFFER_KIB's size, the pool's bound, buffers of an old size freed") {
  CHECK(cupti::parse_buffer_kib("16").bytes == 16384);
  CHECK(cupti::parse_buffer_kib("16").error.empty());
  CHECK(cupti::parse_buffer_kib("65536").bytes == size_t{64} << 20);
  for (const char* bad : {"8", "65537", "", "16k", " 16", "-16", "99999999999999999999999"}) {
    INFO(bad);
    const cupti::BufferSize size = cupti::parse_buffer_kib(bad);
    CHECK(size.bytes == size_t{4} << 20);
    CHECK(size.error == fmt::format("TS_CUPTI_BUFFER_KIB={}: expected a whole number of KiB from 16 to 65536; "
                                    "CUPTI's buffers stay 4096 KiB",
                                    bad));
  }

  // CUPTI's two callbacks, called as CUPTI calls them: buffers of the set size, at most 128 MiB of them.
  const size_t before = cupti::buffer_bytes();
  cupti::set_buffer_bytes(size_t{1} << 20);
  uint8_t* old_size = nullptr;
  size_t size = 0, max_records = 1;
  cupti::buffer_requested(&old_size, &size, &max_records);
  REQUIRE(old_size != nullptr);
  CHECK(size == size_t{1} << 20);
  CHECK(max_records == 0);
  cupti::set_buffer_bytes(size_t{16} << 10);
  std::vector<uint8_t*> held;
  for (int i = 0; i < 8192 + 8; ++i) {
    uint8_t* buffer = nullptr;
    cupti::buffer_requested(&buffer, &size, &max_records);
    if (buffer == nullptr) {
      CHECK(size == 0);
      break;
    }
    CHECK(size == size_t{16} << 10);
    held.push_back(buffer);
  }
  CHECK(held.size() < 8192);  // the 1 MiB buffer (and any CUPTI still holds) count against the bound
  CHECK(held.size() > 4096);  // even if CUPTI held a few of its 4 MiB buffers
  CHECK(cupti::take_records().buffers_refused == 1);
  cupti::buffer_completed(nullptr, 0, old_size, size_t{1} << 20, 0);  // freed: not of the current size
  for (uint8_t* buffer : held) cupti::buffer_completed(nullptr, 0, buffer, size_t{16} << 10, 0);
  uint8_t* again = nullptr;
  cupti::buffer_requested(&again, &size, &max_records);
  CHECK(std::find(held.begin(), held.end(), again) != held.end());  // from the pool, not a new allocation
  cupti::buffer_completed(nullptr, 0, again, size, 0);
  cupti::set_buffer_bytes(before);
  CHECK(cupti::buffer_bytes() == before);
}
