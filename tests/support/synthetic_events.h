// tests/support/synthetic_events.h: hand-built profiler recordings for the table and trace tests.
//
//   SyntheticEvents s(/*use_cuda=*/true);
//   s.step("ProfilerStep#2", 1000, 61000, -1);    // name, start ns, end ns, parent index
//   s.op("ts::mm", 4500, 39000, 0);
//   s.kernel("gemm", 20000, 25000, 1);             // launched by event 1 (shares its External id)
//   profiler::key_averages(s.rec).table(...);
//
// Events are on thread 1 (s.at(i).tid changes that), the GPU work on device 0,
// stream 7, each kernel with a launch call's correlation when one is given.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "profiler/chrome_trace.h"
#include "profiler/event.h"

namespace ts::testing {

class SyntheticEvents {
 public:
  explicit SyntheticEvents(bool use_cuda = false) {
    rec.use_cuda = use_cuda;
    rec.pid = 100;
    rec.process_name = "synthetic";
    rec.threads = {{1, "main"}};
    rec.steady_to_epoch_ns = profiler::trace_base_time_ns() + 1'000'000'000;  // a second after the base
    rec.max_events_per_thread = 1000;
  }

  int op(std::string_view name, int64_t start, int64_t end, int parent) {
    return add(profiler::EventKind::cpu_op, name, start, end, parent);
  }
  int annotation(std::string_view name, int64_t start, int64_t end, int parent) {
    return add(profiler::EventKind::user_annotation, name, start, end, parent);
  }
  int step(std::string_view name, int64_t start, int64_t end, int parent) {
    return add(profiler::EventKind::profiler_step, name, start, end, parent);
  }
  int runtime(std::string_view name, int64_t start, int64_t end, int parent) {
    return launch(profiler::EventKind::cuda_runtime, name, start, end, parent, 211);
  }
  int driver(std::string_view name, int64_t start, int64_t end, int parent) {
    return launch(profiler::EventKind::cuda_driver, name, start, end, parent, 652);
  }
  // GPU work of the op at index `launched_by`; it takes the correlation of that
  // op's last launch call, if it has one.
  int kernel(std::string_view name, int64_t start, int64_t end, int launched_by) {
    const int i = add(profiler::EventKind::kernel, name, start, end, -1);
    profiler::Event& e = at(i);
    e.id = at(launched_by).id;
    e.device = 0;
    e.stream = 7;
    e.tid = 7;
    for (int j = i - 1; j >= 0; --j)
      if (at(j).parent == launched_by && at(j).correlation != 0) {
        e.correlation = at(j).correlation;
        break;
      }
    return i;
  }
  int gpu_annotation(std::string_view name, int64_t start, int64_t end) {
    const int i = add(profiler::EventKind::gpu_user_annotation, name, start, end, -1);
    at(i).device = 0;
    at(i).stream = 7;
    at(i).tid = 7;
    return i;
  }
  // A wait the runtime call at index `call` made: "Context Sync" on the device lane
  // (stream -1), others on stream 7; it shares the call's correlation.
  int sync(std::string_view name, int64_t start, int64_t end, int call) {
    const int i = add(profiler::EventKind::cuda_sync, name, start, end, -1);
    profiler::Event& e = at(i);
    e.id = at(call).id;
    e.device = 0;
    e.stream = name == "Context Sync" ? -1 : 7;
    e.tid = e.stream;
    e.correlation = at(call).correlation;
    return i;
  }
  // CUPTI's own work ("Activity Buffer Request"): no op, no device, no stream.
  int overhead(std::string_view name, int64_t start, int64_t end) {
    const int i = add(profiler::EventKind::overhead, name, start, end, -1);
    at(i).id = 0;
    return i;
  }
  int memory(int64_t time, int64_t bytes, int parent, bool device = false) {
    const int i = add(profiler::EventKind::memory, "[memory]", time, time, parent);
    profiler::Event& e = at(i);
    e.id = 0;
    e.bytes = bytes;
    e.memory_device = device ? kCUDA : kCPU;
    e.addr = 0x1000 + static_cast<uint64_t>(i) * 64;
    return i;
  }
  // record_shapes arguments: tensors of these shapes (contiguous, f32), then `scalars` scalars of value 1.
  void inputs(int i, std::initializer_list<std::initializer_list<int64_t>> shapes, int scalars) {
    for (const auto& shape : shapes) {
      profiler::InputMeta m;
      m.kind = profiler::InputMeta::Kind::tensor;
      m.shape = Dims(shape);
      m.strides = contiguous_strides(m.shape);
      at(i).inputs.push_back(m);
    }
    for (int k = 0; k < scalars; ++k) {
      profiler::InputMeta m;
      m.kind = profiler::InputMeta::Kind::scalar;
      m.value = 1;
      at(i).inputs.push_back(m);
    }
  }

  profiler::Event& at(int i) { return rec.events[static_cast<size_t>(i)]; }

  profiler::Recording rec;

 private:
  int add(profiler::EventKind kind, std::string_view name, int64_t start, int64_t end, int parent) {
    profiler::Event& e = rec.events.emplace_back();
    e.kind = kind;
    e.name = name;
    e.start_ns = start;
    e.end_ns = end;
    e.id = next_id_++;
    e.tid = 1;
    e.parent = parent;
    rec.window_start_ns = std::min(rec.window_start_ns == 0 ? start : rec.window_start_ns, start);
    rec.window_end_ns = std::max(rec.window_end_ns, end);
    return static_cast<int>(rec.events.size()) - 1;
  }
  int launch(profiler::EventKind kind, std::string_view name, int64_t start, int64_t end, int parent, int cbid) {
    const int i = add(kind, name, start, end, parent);
    at(i).id = parent >= 0 ? at(parent).id : 0;
    at(i).correlation = next_correlation_++;
    at(i).cbid = cbid;
    return i;
  }

  uint64_t next_id_ = 1;
  uint64_t next_correlation_ = 1000;
};

}  // namespace ts::testing
