// profiler/event.h: what the profiler records, one Event per scope, activity or allocation.
//
// The model is Kineto's (the library behind torch.profiler), so that the
// table (key_averages.h) and the Chrome trace (chrome_trace.h) can be built
// the way PyTorch builds them:
//
//   CPU side, recorded on the thread that ran them
//     cpu_op            every op through ts::dispatch: "ts::matmul", "ts::mm"
//     user_annotation   record_function("matmul_add")
//     profiler_step     "ProfilerStep#N", one per step when a schedule is given
//     memory            "[memory]": one allocation (bytes > 0) or free (bytes < 0), an instant
//   CUDA side, turned into Events from CUPTI records when the trace stops
//     cuda_runtime, cuda_driver   API calls on a CPU thread: cudaLaunchKernel, cuLaunchKernelEx
//     kernel, memcpy, memset      GPU work: pid = device, tid = stream
//     gpu_user_annotation         the span of an annotation's GPU work on one stream
//     cuda_sync                   a wait: "Context Sync" (cudaDeviceSynchronize), "Stream Sync",
//                                 "Event Sync", "Stream Wait Event"; trace only, never CUDA time
//     overhead                    CUPTI's own work (buffer flushes, instrumentation)
//
// Links between events:
//   parent       the enclosing CPU scope on the same thread, known when the
//                scope opens (CUPTI's runtime calls get the op that made them).
//   id           "External id": unique per process for ops and annotations. A
//                kernel, memcpy, memset or runtime call carries the id of the
//                innermost op that launched it, which is how its GPU time is
//                charged to that op ("Self CUDA").
//   correlation  CUPTI's id, shared by a launch call and the GPU work it made
//                (the flow arrow in the trace).
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace ts::profiler {

enum class EventKind : uint8_t {
  cpu_op,
  user_annotation,
  profiler_step,
  memory,
  cuda_runtime,
  cuda_driver,
  kernel,
  memcpy,
  memset,
  gpu_user_annotation,
  cuda_sync,
  overhead,
};

// Kineto's "cat" for the kind: "cpu_op", "user_annotation" (ProfilerStep#N too),
// "cpu_instant_event" ([memory]), "cuda_runtime", "kernel", "gpu_memcpy", ...
const char* category(EventKind kind);

// GPU-side activity: its duration is device time and it runs on pid = device, tid = stream.
constexpr bool is_device_activity(EventKind kind) {
  return kind == EventKind::kernel || kind == EventKind::memcpy || kind == EventKind::memset ||
         kind == EventKind::gpu_user_annotation;
}
// Drawn on a GPU lane (pid = device, tid = stream; a device-wide sync has stream -1).
constexpr bool on_gpu_lane(EventKind kind) { return is_device_activity(kind) || kind == EventKind::cuda_sync; }
// A scope or API call on a CPU thread (a duration event with CPU time).
constexpr bool is_cpu_range(EventKind kind) {
  return kind == EventKind::cpu_op || kind == EventKind::user_annotation || kind == EventKind::profiler_step ||
         kind == EventKind::cuda_runtime || kind == EventKind::cuda_driver;
}

// One argument of an op, as record_shapes keeps it: a tensor's dtype, shape and
// strides; a scalar's value (alpha, beta, a scalar operand); or an absent optional.
struct InputMeta {
  enum class Kind : uint8_t { tensor, scalar, none };
  Kind kind = Kind::none;
  DType dtype = DType::f32;
  Dims shape, strides;
  double value = 0;
};

// A source location (std::source_location's strings are static, so are these).
struct CallSite {
  const char* file = nullptr;  // nullptr: none recorded
  uint32_t line = 0;
  const char* function = nullptr;

  static CallSite from(const std::source_location& loc) { return {loc.file_name(), loc.line(), loc.function_name()}; }
  bool known() const { return file != nullptr; }
};

// Launch geometry and resources of a kernel, as CUPTI reports them (the trace's kernel args).
struct KernelInfo {
  int grid[3] = {0, 0, 0};
  int block[3] = {0, 0, 0};
  int registers_per_thread = 0;
  int64_t shared_memory = 0;  // static + dynamic bytes per block
  double blocks_per_sm = 0, warps_per_sm = 0;
  int occupancy_percent = 0;  // estimated achieved occupancy
};

struct Event {
  EventKind kind = EventKind::cpu_op;
  // Op names are static strings; other names are interned by the profiler:
  // the view stays valid for the life of the process.
  std::string_view name{};
  int64_t start_ns = 0, end_ns = 0;  // steady clock (profiler::now_ns()); an instant has end == start
  uint64_t id = 0;                   // "External id" (see above); 0: none
  int64_t tid = 0;                   // OS thread id (CPU side); stream id (GPU side)
  int32_t parent = -1;               // index in the event list of the enclosing CPU scope; -1: top level

  // cpu_op
  const char* variant = nullptr;     // the kernel variant that ran ("mm/cpu/openblas")
  std::vector<InputMeta> inputs{};   // record_shapes: the op's arguments in PyTorch's order
  int64_t flops = 0;                 // with_flops: floating-point operations (0: not counted)
  // with_stack: the user's call site. Ops called by other ops inherit it, so a
  // learner sees their own line, not the library's.
  CallSite call_site{};

  // profile_memory: net bytes allocated while this was the innermost open scope
  // on its thread ("Self CPU Mem" / "Self CUDA Mem"; the totals add the children).
  int64_t self_cpu_memory = 0, self_device_memory = 0;

  // memory: the allocation itself
  int64_t bytes = 0;  // > 0 allocation, < 0 free
  int64_t total_allocated = 0, total_reserved = 0;
  uint64_t addr = 0;
  Device memory_device = kCPU;

  // CUDA side
  int device = -1;           // GPU index (kernel, memcpy, memset, gpu annotation, sync)
  int64_t stream = -1;       // -1: none (a device-wide sync)
  uint64_t correlation = 0;  // CUPTI correlation id: launch call <-> GPU work
  int cbid = 0;              // CUPTI callback id of a runtime/driver call (211: cudaLaunchKernel)
  uint32_t cuda_event_id = 0;  // cuda_sync on an event ("Event Sync", "Stream Wait Event"): the event waited on
  KernelInfo kernel_info{};
  std::string_view mangled_name{};  // kernel: the name as the binary has it (`name` is demangled)
  // memcpy/memset: bytes moved are in `bytes` above.

  int64_t duration_ns() const { return end_ns - start_ns; }
};

// Everything a stopped profiler hands to key_averages() and export_chrome_trace().
struct ThreadInfo {
  int64_t tid;
  std::string name;  // the OS thread name ("01_matmul_add", "worker")
};

struct DeviceProperties {  // one GPU, as the trace's "deviceProperties" lists it
  int id = 0;
  std::string name{};
  int64_t total_global_mem = 0;
  int compute_major = 0, compute_minor = 0;
  int max_threads_per_block = 0, max_threads_per_multiprocessor = 0;
  int regs_per_block = 0, warp_size = 0;
  int64_t shared_mem_per_block = 0;
  int num_sms = 0;
  int regs_per_multiprocessor = 0;
  int64_t shared_mem_per_block_optin = 0, shared_mem_per_multiprocessor = 0;
};

// Where the CUDA side of a recording came from and how much of it is missing.
struct DeviceActivityInfo {
  std::string source;  // "cupti", "cuda_events" (per-op CUDA-event timing: CUPTI could not start), "" (none)
  std::string clock;   // how CUDA timestamps were put on the CPU events' clock
  std::string error;   // why CUPTI could not start ("" when it did)
  int64_t cupti_dropped_records = 0;   // CUPTI's own count (cuptiActivityGetNumDroppedRecords)
  int64_t buffers_refused = 0;         // buffer requests our bounded pool could not serve (records lost)
  int64_t launch_order_violations = 0; // GPU records CUPTI's clock put before their launch call began
  int64_t gpu_clock_shift_ns = 0;      // added to every GPU record's times so that none starts before its launch
  int64_t stream_overlaps_trimmed = 0; // GPU records ended where the next on their stream began, and stream syncs
                                       // started where the work they began inside ended (CUPTI overlapped them)
  int64_t stream_overlap_max_ns = 0;   // the most taken off one of those
  int64_t unmatched_records = 0;       // GPU work whose launch call was not recorded
  int64_t graph_replays_unmatched = 0; // CUDA graph replays whose GPU work did not match the captured nodes
  std::string first_unmatched_replay;  // the first of those: the graph's nodes and the GPU records seen
  int64_t failed_calls = 0;            // the profiler's own CUDA/CUPTI calls that failed (cuda_call_check.h)
  std::string first_failed_call;       // the first of those: expression, error, file and line
};

// A CUDA graph replay a recording saw: the External id of its "ts::cuda::Graph::replay" event, and
// the ops its capture recorded (profiler/graph_replays.h).
struct CapturedGraph;
struct GraphReplay {
  uint64_t id = 0;
  std::shared_ptr<const CapturedGraph> graph;
};

struct Recording {
  std::vector<Event> events;  // sorted by (start, -end); parents come before their children
  std::vector<ThreadInfo> threads;
  std::vector<DeviceProperties> devices;
  int64_t pid = 0;
  std::string process_name;
  int64_t window_start_ns = 0, window_end_ns = 0;  // steady clock: the capture window
  int64_t steady_to_epoch_ns = 0;                  // add to a steady time to get Unix-epoch ns
  int64_t dropped_events = 0;                      // scopes not recorded because a buffer was full
  int64_t scopes_ended_early = 0;  // scopes ended with an enclosing record_function that ended before them
  size_t max_events_per_thread = 0;
  bool use_cuda = false;  // CUDA activity was asked for: the table may show CUDA columns
  DeviceActivityInfo device_activity;
  std::vector<GraphReplay> graph_replays;  // until expand_graph_replays() turns them into events
  bool record_shapes = false, profile_memory = false, with_stack = false, with_flops = false;
};

// Indices of events in (start, -end) order, ties kept: an enclosing scope comes
// before what it encloses. The trace, the table and the recording all use it.
std::vector<int32_t> start_order(const std::vector<Event>& events);

}  // namespace ts::profiler
