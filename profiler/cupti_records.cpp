// profiler/cupti_records.cpp: kept CUPTI records -> Events, step by step (see cupti_records.h).
#include "profiler/cupti_records.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace ts::profiler::cupti {

namespace {

// The capture window, on the profiler's clock.
struct Window {
  int64_t begin = 0, end = 0;
  bool contains(int64_t t) const { return begin <= t && t <= end; }
};

// External id -> index of the CPU event (op or user scope) that carries it.
using EventsById = std::unordered_map<uint64_t, int32_t>;

EventsById events_by_id(const std::vector<Event>& events) {
  EventsById by_id;
  for (int32_t i = 0; const Event& e : events) {
    if (e.id != 0) by_id.emplace(e.id, i);
    ++i;
  }
  return by_id;
}

// The External id a correlation was stamped with; 0 when none.
uint64_t external_id(const std::unordered_map<uint32_t, uint64_t>& ids, uint32_t correlation) {
  const auto it = ids.find(correlation);
  return it == ids.end() ? 0 : it->second;
}

// Step 1: CUPTI's times onto the profiler's clock.
void shift_times(KeptRecords& kept, int64_t offset_ns) {
  if (offset_ns == 0) return;
  const auto shift = [offset_ns](auto& record) {
    record.start += offset_ns;
    record.end += offset_ns;
  };
  std::for_each(kept.api.begin(), kept.api.end(), shift);
  std::for_each(kept.gpu.begin(), kept.gpu.end(), shift);
  std::for_each(kept.overhead.begin(), kept.overhead.end(), shift);
}

// The launch calls of the window, by correlation.
struct Launches {
  std::unordered_map<uint32_t, int64_t> start;  // correlation -> start of its call
  std::unordered_set<uint32_t> outside_window;  // correlations of calls outside it (the wait and warmup steps)
};

// The CPU scope with External id `owner` when it encloses [start, end] on
// thread `tid`; -1 otherwise (a parent on another lane would break nesting).
int32_t enclosing_scope(const std::vector<Event>& events, const EventsById& by_id, uint64_t owner, int64_t tid,
                        int64_t start, int64_t end) {
  if (owner == 0) return -1;
  const auto it = by_id.find(owner);
  if (it == by_id.end()) return -1;
  const Event& scope = events[static_cast<size_t>(it->second)];
  return scope.tid == tid && scope.start_ns <= start && end <= scope.end_ns ? it->second : -1;
}

// Step 2: API calls in the window, one per correlation, each under the op (else
// the user scope) that made it. A call's id is its op's External id, as for the
// GPU work it launched.
Launches append_api_calls(KeptRecords& kept, Window window, const EventsById& by_id, Recording& rec) {
  Launches launches;
  // Runtime calls first: cudaLaunchKernel and the cuLaunchKernel it makes share a
  // correlation, and the runtime call is the one the trace shows.
  std::stable_sort(kept.api.begin(), kept.api.end(),
                   [](const ApiRecord& a, const ApiRecord& b) { return a.driver < b.driver; });
  for (const ApiRecord& a : kept.api) {
    if (!window.contains(a.start)) {
      launches.outside_window.insert(a.correlation);
      continue;
    }
    if (a.correlation != 0 && launches.start.contains(a.correlation)) continue;
    launches.start[a.correlation] = a.start;
    const uint64_t op = external_id(kept.op_of, a.correlation);
    const uint64_t owner = op != 0 ? op : external_id(kept.annotation_of, a.correlation);
    const int64_t end = std::max(a.end, a.start);
    rec.events.push_back(Event{.kind = a.driver ? EventKind::cuda_driver : EventKind::cuda_runtime,
                               .name = a.name,
                               .start_ns = a.start,
                               .end_ns = end,
                               .id = op,
                               .tid = a.tid,
                               .parent = enclosing_scope(rec.events, by_id, owner, a.tid, a.start, end),
                               .correlation = a.correlation,
                               .cbid = static_cast<int>(a.cbid)});
  }
  return launches;
}

// A sync record names only its context: its device is the one that context's
// GPU work ran on (the earliest seen), else the current device.
void find_sync_devices(std::vector<GpuRecord>& gpu, int current_device) {
  std::unordered_map<uint32_t, uint32_t> device_of_context;
  for (const GpuRecord& g : gpu)
    if (g.kind != EventKind::cuda_sync) device_of_context.emplace(g.context, g.device);
  for (GpuRecord& g : gpu) {
    if (g.kind != EventKind::cuda_sync) continue;
    const auto it = device_of_context.find(g.context);
    g.device = it != device_of_context.end() ? it->second : static_cast<uint32_t>(current_device);
  }
}

// A user scope's GPU work on one stream, from its first start to its last end.
struct Span {
  int64_t start, end;
};
using AnnotationSpans = std::map<std::tuple<uint32_t, uint32_t, uint64_t>, Span>;  // (device, stream, scope's id)

// Step 3a: GPU work cannot start before the launch call that queued it began, but CUPTI's mapping of
// the GPU's clock onto the profiler's puts it a few microseconds early in some sessions (seen on the
// H200 with CUPTI 13.0: the same offset for every record of a session). Counts the records placed
// before their launch call and moves the session's GPU work (not its syncs: a sync is the CPU's call)
// later by the smallest amount that puts each after its launch: a lower bound of the error, as the
// true launch latency is unknown. The table and the trace say by how much.
void keep_gpu_work_after_launches(std::vector<GpuRecord>& gpu, const Launches& launches, DeviceActivityInfo& info) {
  int64_t shift = 0;
  for (const GpuRecord& g : gpu) {
    const auto launched = launches.start.find(g.correlation);
    if (g.correlation == 0 || launched == launches.start.end() || g.start >= launched->second) continue;
    ++info.launch_order_violations;
    if (g.kind != EventKind::cuda_sync) shift = std::max(shift, launched->second - g.start);
  }
  for (GpuRecord& g : gpu) {
    if (g.kind == EventKind::cuda_sync) continue;
    g.start += shift;
    g.end += shift;
  }
  info.gpu_clock_shift_ns = shift;
}

// Step 3a': work on one stream runs one piece after another, but CUPTI may time a piece as starting a
// little before the one before it ended (seen on the H200 between the kernels of a CUDA graph
// replay, by up to a fraction of a microsecond). A trace's lane cannot show two slices overlapping
// without one inside the other: the earlier one ends where the next began. A sync on a stream shares
// that stream's lane; one that began while a piece of work there was running and ends after it (a
// cudaStreamSynchronize called as soon as a graph launch returns, while the replay's last kernel
// runs) starts where that piece ended: its slice shows the wait after the work it waited for, its API
// call keeps its true span on the CPU lane, and the work keeps its CUDA time. A sync that contains the
// work, or lies inside it, nests already; a device-wide sync (stream "none") shares no lane with work.
// `gpu` is in start order and the syncs know their device. Each record ended or moved is counted,
// with the most taken off one, for the table and the trace.
void end_before_next_on_stream(std::vector<GpuRecord>& gpu, DeviceActivityInfo& info) {
  const auto count = [&info](int64_t taken_ns) {
    ++info.stream_overlaps_trimmed;
    info.stream_overlap_max_ns = std::max(info.stream_overlap_max_ns, taken_ns);
  };
  std::map<std::pair<uint32_t, uint32_t>, GpuRecord*> last;  // (device, stream) -> the piece that ends latest
  for (GpuRecord& g : gpu) {
    if (g.kind == EventKind::cuda_sync) continue;
    GpuRecord*& before = last[{g.device, g.stream}];
    if (before != nullptr && before->end > g.start && g.end > before->end) {
      count(before->end - g.start);
      before->end = g.start;
    }
    if (before == nullptr || g.end > before->end) before = &g;
  }
  // The syncs, once every piece of work has its final end.
  last.clear();
  for (GpuRecord& g : gpu) {
    if (g.kind != EventKind::cuda_sync) {
      GpuRecord*& before = last[{g.device, g.stream}];
      if (before == nullptr || g.end > before->end) before = &g;
      continue;
    }
    const auto it = last.find({g.device, g.stream});
    if (it == last.end()) continue;
    const GpuRecord& work = *it->second;
    if (work.start < g.start && g.start < work.end && g.end > work.end) {
      count(work.end - g.start);
      g.start = work.end;
    }
  }
}

// Step 3b: GPU work launched in the window, charged to the op that launched it.
// Returns the spans of the user scopes it ran under (a wait is not a scope's work).
AnnotationSpans append_gpu_work(KeptRecords& kept, const Launches& launches, Window window,
                                const ConversionContext& context, Recording& rec) {
  DeviceActivityInfo& info = rec.device_activity;
  keep_gpu_work_after_launches(kept.gpu, launches, info);
  std::sort(kept.gpu.begin(), kept.gpu.end(), [](const GpuRecord& a, const GpuRecord& b) { return a.start < b.start; });
  find_sync_devices(kept.gpu, context.current_device);
  end_before_next_on_stream(kept.gpu, info);
  AnnotationSpans spans;
  for (const GpuRecord& g : kept.gpu) {
    if (!launches.start.contains(g.correlation)) {
      if (launches.outside_window.contains(g.correlation) || g.start < window.begin) continue;  // wait/warmup work
      ++info.unmatched_records;
    }
    const int32_t stream = static_cast<int32_t>(g.stream);  // CUPTI's "none" (a device-wide sync) reads as -1
    Event e{.kind = g.kind,
            .name = g.name,
            .start_ns = g.start,
            .end_ns = std::max(g.end, g.start),
            .id = external_id(kept.op_of, g.correlation),
            .tid = stream,
            .bytes = g.bytes,
            .device = static_cast<int>(g.device),
            .stream = stream,
            .correlation = g.correlation,
            .cuda_event_id = g.cuda_event_id,
            .mangled_name = g.mangled};
    if (g.kind == EventKind::kernel && g.device < context.devices.size())
      e.kernel_info = kernel_footprint(g.launch, context.devices[g.device]);
    if (const uint64_t scope = external_id(kept.annotation_of, g.correlation);
        scope != 0 && g.kind != EventKind::cuda_sync) {
      const auto [it, inserted] = spans.try_emplace({g.device, g.stream, scope}, Span{e.start_ns, e.end_ns});
      if (!inserted) it->second = {std::min(it->second.start, e.start_ns), std::max(it->second.end, e.end_ns)};
    }
    rec.events.push_back(std::move(e));
  }
  return spans;
}

// Step 4: a user scope's span on each stream it launched work on (PyTorch's gpu_user_annotation).
void append_annotation_spans(const AnnotationSpans& spans, const EventsById& by_id, Recording& rec) {
  for (const auto& [key, span] : spans) {
    const auto& [device, stream, scope] = key;
    const auto it = by_id.find(scope);
    if (it == by_id.end()) continue;
    rec.events.push_back(Event{.kind = EventKind::gpu_user_annotation,
                               .name = rec.events[static_cast<size_t>(it->second)].name,
                               .start_ns = span.start,
                               .end_ns = span.end,
                               .id = scope,
                               .tid = stream,
                               .device = static_cast<int>(device),
                               .stream = stream});
  }
}

// Step 5: CUPTI's own work in the window.
void append_overhead(const std::vector<OverheadRecord>& overhead, Window window, Recording& rec) {
  for (const OverheadRecord& o : overhead)
    if (window.contains(o.start))
      rec.events.push_back(
          Event{.kind = EventKind::overhead, .name = o.name, .start_ns = o.start, .end_ns = std::max(o.end, o.start)});
}

// The trace's deviceProperties, one entry per device.
void append_devices(std::span<const cudaDeviceProp> devices, Recording& rec) {
  for (int id = 0; const cudaDeviceProp& p : devices) {
    rec.devices.push_back({.id = id++,
                           .name = p.name,
                           .total_global_mem = static_cast<int64_t>(p.totalGlobalMem),
                           .compute_major = p.major,
                           .compute_minor = p.minor,
                           .max_threads_per_block = p.maxThreadsPerBlock,
                           .max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor,
                           .regs_per_block = p.regsPerBlock,
                           .warp_size = p.warpSize,
                           .shared_mem_per_block = static_cast<int64_t>(p.sharedMemPerBlock),
                           .num_sms = p.multiProcessorCount,
                           .regs_per_multiprocessor = p.regsPerMultiprocessor,
                           .shared_mem_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin),
                           .shared_mem_per_multiprocessor = static_cast<int64_t>(p.sharedMemPerMultiprocessor)});
  }
}

}  // namespace

void append_cupti_events(KeptRecords& kept, const ConversionContext& context, Recording& rec) {
  const Window window{rec.window_start_ns, rec.window_end_ns};
  const EventsById by_id = events_by_id(rec.events);  // the CPU events, before any CUDA event joins them
  shift_times(kept, context.clock_offset_ns);
  const Launches launches = append_api_calls(kept, window, by_id, rec);
  const AnnotationSpans spans = append_gpu_work(kept, launches, window, context, rec);
  append_annotation_spans(spans, by_id, rec);
  append_overhead(kept.overhead, window, rec);
  append_devices(context.devices, rec);
}

}  // namespace ts::profiler::cupti
