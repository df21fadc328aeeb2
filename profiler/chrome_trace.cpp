// profiler/chrome_trace.cpp: a hand-written JSON writer in Kineto's key order (libkineto output_json.cpp).
//
// Written with fmt into one buffer: 20,000 ops take a few milliseconds.
#include "profiler/chrome_trace.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <set>
#include <unordered_map>
#include <utility>

#include "profiler/key_averages.h"
#include "tensor/error.h"
#include "tensor/file_output.h"

namespace ts::profiler {

int64_t trace_base_time_ns() {
  static const int64_t base = [] {
    constexpr int64_t kPeriodNs = 7'889'238LL * 1'000'000'000LL;  // about three months
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return now / kPeriodNs * kPeriodNs;
  }();
  return base;
}

namespace {

using Buffer = fmt::memory_buffer;

void put(Buffer& b, std::string_view s) { b.append(s.data(), s.data() + s.size()); }

void put_int(Buffer& b, int64_t v) {
  const fmt::format_int digits(v);
  b.append(digits.data(), digits.data() + digits.size());
}

// [64, 32]: a shape or strides.
void put_dims(Buffer& b, const Dims& d) {
  b.push_back('[');
  for (int i = 0; i < d.size(); ++i) {
    if (i) put(b, ", ");
    put_int(b, d[i]);
  }
  b.push_back(']');
}

// The non-ASCII character at the start of s: the bytes of a well-formed UTF-8 sequence, or of
// the maximal ill-formed prefix (at least one byte) that one U+FFFD replaces (Unicode's "maximal
// subpart" practice, which Python's errors="replace" follows).
struct Utf8Char {
  size_t bytes;
  bool valid;
};
Utf8Char utf8_char(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the range of the second byte (Unicode's table 3-7)
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlong forms
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // no overlong forms
    if (lead == 0xf4) high = 0x8f;  // nothing above U+10FFFF
  }
  if (length == 0) return {1, false};  // 0x80..0xc1 and 0xf5..0xff never start a character
  size_t taken = 1;
  while (taken < length && taken < s.size()) {
    const unsigned char b = byte(taken);
    if (taken == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xbf)) break;
    ++taken;
  }
  return {taken, taken == length};
}

// A JSON string literal: quotes, backslashes and control characters escaped; valid UTF-8 kept as
// it is, and each ill-formed byte sequence replaced by U+FFFD, so that the file is valid UTF-8
// (strict readers, Python's json.load and nlohmann::json among them, refuse anything else).
void put_string(Buffer& b, std::string_view s) {
  b.push_back('"');
  const bool plain = std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return c == '"' || c == '\\' || u < 0x20 || u >= 0x80;
  });
  if (plain) {
    put(b, s);
  } else {
    for (size_t i = 0; i < s.size();) {
      const char c = s[i];
      if (static_cast<unsigned char>(c) >= 0x80) {
        const Utf8Char u = utf8_char(s.substr(i));
        put(b, u.valid ? s.substr(i, u.bytes) : std::string_view("\xEF\xBF\xBD"));  // U+FFFD
        i += u.bytes;
        continue;
      }
      switch (c) {
        case '"': put(b, "\\\""); break;
        case '\\': put(b, "\\\\"); break;
        case '\n': put(b, "\\n"); break;
        case '\t': put(b, "\\t"); break;
        case '\r': put(b, "\\r"); break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(b), "\\u{:04x}", static_cast<int>(c));
          } else {
            b.push_back(c);
          }
      }
      ++i;
    }
  }
  b.push_back('"');
}

class Writer {
 public:
  Writer(const Recording& r, Buffer& out) : r_(r), out_(out), base_(trace_base_time_ns()) {}

  // Microseconds with exactly three decimals, relative to the base (never negative).
  void put_ts(int64_t steady_ns) { put_dur(steady_ns + r_.steady_to_epoch_ns - base_); }
  void put_dur(int64_t ns) {
    if (ns < 0) ns = 0;
    put_int(out_, ns / 1000);
    const auto frac = static_cast<int>(ns % 1000);
    const char decimals[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                              static_cast<char>('0' + frac % 10)};
    out_.append(decimals, decimals + 4);
  }

  void header() {
    put(out_, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    for (size_t i = 0; i < r_.devices.size(); ++i) {
      const DeviceProperties& d = r_.devices[i];
      put(out_, i ? ",\n    {\n" : "\n    {\n");
      fmt::format_to(std::back_inserter(out_), "      \"id\": {}, \"name\": ", d.id);
      put_string(out_, d.name);
      fmt::format_to(std::back_inserter(out_),
                     ", \"totalGlobalMem\": {},\n      \"computeMajor\": {}, \"computeMinor\": {},\n"
                     "      \"maxThreadsPerBlock\": {}, \"maxThreadsPerMultiprocessor\": {},\n"
                     "      \"regsPerBlock\": {}, \"warpSize\": {},\n      \"sharedMemPerBlock\": {}, \"numSms\": {}\n"
                     "    , \"regsPerMultiprocessor\": {}, \"sharedMemPerBlockOptin\": {}, "
                     "\"sharedMemPerMultiprocessor\": {}\n    }}",
                     d.total_global_mem, d.compute_major, d.compute_minor, d.max_threads_per_block,
                     d.max_threads_per_multiprocessor, d.regs_per_block, d.warp_size, d.shared_mem_per_block,
                     d.num_sms, d.regs_per_multiprocessor, d.shared_mem_per_block_optin,
                     d.shared_mem_per_multiprocessor);
    }
    put(out_, r_.devices.empty() ? "],\n" : "\n  ],\n");
    // HTA finds the rank with a regex that wants a space after the colon, and
    // reads metadata only up to "traceEvents": every key goes before it.
    put(out_, "  \"distributedInfo\": {\"rank\": 0},\n");
    if (r_.record_shapes) put(out_, "  \"record_shapes\": 1,\n");
    if (r_.profile_memory) put(out_, "  \"profile_memory\": 1,\n");
    if (r_.with_stack) put(out_, "  \"with_stack\": 1,\n");
    if (r_.with_flops) put(out_, "  \"with_flops\": 1,\n");
    fmt::format_to(std::back_inserter(out_), "  \"dropped_events\": {},\n", r_.dropped_events);
    if (r_.use_cuda) {  // where the CUDA side came from, its clock, and what is missing from it
      const DeviceActivityInfo& d = r_.device_activity;
      put(out_, "  \"cuda_activity\": {\"source\": ");
      put_string(out_, d.source.empty() ? "none" : d.source);
      put(out_, ", \"clock\": ");
      put_string(out_, d.clock);
      put(out_, ", \"error\": ");
      put_string(out_, d.error);
      fmt::format_to(std::back_inserter(out_),
                     ", \"cupti_dropped_records\": {}, \"buffers_refused\": {}, \"launch_order_violations\": {}, "
                     "\"gpu_clock_shift_ns\": {}, \"stream_overlaps_trimmed\": {}, \"stream_overlap_max_ns\": {}, "
                     "\"unmatched_records\": {}, \"graph_replays_unmatched\": {}, \"failed_calls\": {}, "
                     "\"first_failed_call\": ",
                     d.cupti_dropped_records, d.buffers_refused, d.launch_order_violations, d.gpu_clock_shift_ns,
                     d.stream_overlaps_trimmed, d.stream_overlap_max_ns, d.unmatched_records,
                     d.graph_replays_unmatched, d.failed_calls);
      put_string(out_, d.first_failed_call);
      put(out_, "},\n");
    }
    fmt::format_to(std::back_inserter(out_), "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {},\n",
                   base_);
    put(out_, "  \"traceEvents\": [\n");
  }

  void event(const Event& e, size_t index) {
    if (e.kind == EventKind::memory) return memory(e, index);
    const bool device = on_gpu_lane(e.kind);
    put(out_, "  {\n    \"ph\": \"X\", \"cat\": \"");
    put(out_, category(e.kind));
    put(out_, "\", \"name\": ");
    put_string(out_, e.name);
    if (device) {
      fmt::format_to(std::back_inserter(out_), ", \"pid\": {}, \"tid\": {},\n    \"ts\": ", e.device, e.stream);
    } else if (e.kind == EventKind::overhead) {
      put(out_, ", \"pid\": -1, \"tid\": 0,\n    \"ts\": ");
    } else {
      fmt::format_to(std::back_inserter(out_), ", \"pid\": {}, \"tid\": {},\n    \"ts\": ", r_.pid, e.tid);
    }
    put_ts(e.start_ns);
    put(out_, ", \"dur\": ");
    put_dur(e.duration_ns());
    args(e, index);
    put(out_, "\n  },\n");
    flow(e);
  }

  void metadata() {
    const int64_t ts = r_.window_start_ns;
    process(r_.pid, r_.process_name, "CPU", r_.pid, ts);
    std::set<int> gpus;
    std::set<std::pair<int, int64_t>> streams;
    for (const DeviceProperties& d : r_.devices) gpus.insert(d.id);
    for (const Event& e : r_.events) {
      if (!on_gpu_lane(e.kind)) continue;
      gpus.insert(e.device);
      streams.insert({e.device, e.stream});
    }
    for (int gpu : gpus) process(gpu, r_.process_name, fmt::format("GPU {}", gpu), 5000000 + gpu, ts);
    if (std::any_of(r_.events.begin(), r_.events.end(), [](const Event& e) { return e.kind == EventKind::overhead; })) {
      process(-1, "CUPTI overhead", "profiler overhead", 6000000, ts);  // never an op's time
      thread(-1, 0, "CUPTI overhead", 0, ts);
    }
    for (const auto& [gpu, stream] : streams) {
      if (stream < 0) {
        thread(gpu, stream, fmt::format("Device {}", gpu), -1, ts);  // device-wide syncs, as Kineto names the row
      } else {
        thread(gpu, stream, fmt::format("stream {} ", stream), stream, ts);
      }
    }
    for (const ThreadInfo& t : r_.threads)
      thread(r_.pid, t.tid, fmt::format("thread {} ({})", t.tid, t.name.empty() ? r_.process_name : t.name), t.tid, ts);
  }

  void footer(const std::string& trace_name) {
    // The collection span and the window markers, as Kineto writes them (its
    // own literal names, which tools know).
    put(out_, "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    put_ts(r_.window_start_ns);
    put(out_, ", \"dur\": ");
    put_dur(r_.window_end_ns - r_.window_start_ns);
    put(out_,
        ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n"
        "    \"args\": {\n      \"Op count\": 0\n    }\n  },\n");
    put(out_, "  {\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
    put_ts(r_.window_start_ns);
    put(out_, ",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912\n    }\n  },\n");
    put(out_, "  {\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n"
              "    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
    put_ts(r_.window_start_ns);
    put(out_, "\n  },\n  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n"
              "    \"pid\": \"\", \"tid\": \"\", \"ts\": ");
    put_ts(r_.window_end_ns);
    put(out_, "\n  }\n  ],\n  \"traceName\": ");
    put_string(out_, trace_name);
    put(out_, "\n}\n");
  }

  // GPU work per correlation: a launch call gets one flow start per piece of work in the trace (a
  // CUDA graph launch has one per kernel it ran), none when its work is not there.
  void index_correlations() {
    for (const Event& e : r_.events)
      if (on_gpu_lane(e.kind) && e.correlation != 0) ++gpu_work_per_correlation_[e.correlation];
  }

 private:
  void args(const Event& e, size_t index) {
    auto it = std::back_inserter(out_);
    put(out_, ",\n    \"args\": {\n      ");
    bool first = true;
    const auto sep = [&] {
      if (!first) put(out_, ", ");
      first = false;
    };
    if (e.id != 0) {
      fmt::format_to(it, "\"External id\": {}", e.id);
      first = false;
    }
    switch (e.kind) {
      case EventKind::cpu_op:
      case EventKind::user_annotation:
      case EventKind::profiler_step:
        sep();
        put(out_, "\"Record function id\": 0");
        if (e.kind == EventKind::cpu_op && r_.record_shapes) input_args(e);
        if (e.call_site.known()) {
          put(out_, ", \"Call stack\": ");
          put_string(out_, format_frame(e.call_site));
        }
        if (e.variant != nullptr) {
          put(out_, ", \"Variant\": ");
          put_string(out_, e.variant);
        }
        if (e.flops > 0) fmt::format_to(it, ", \"flops\": {}", e.flops);
        fmt::format_to(it, ", \"Ev Idx\": {}", index);
        break;
      case EventKind::cuda_runtime:
      case EventKind::cuda_driver:
        sep();
        fmt::format_to(it, "\"cbid\": {}, \"correlation\": {}", e.cbid, e.correlation);
        break;
      case EventKind::kernel: {
        const KernelInfo& k = e.kernel_info;
        sep();
        fmt::format_to(it,
                       "\"queued\": 0, \"device\": {}, \"context\": 1, \"stream\": {}, \"correlation\": {}, "
                       "\"registers per thread\": {}, \"shared memory\": {}, \"blocks per SM\": {:.6f}, "
                       "\"warps per SM\": {:.6f}, \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}], "
                       "\"est. achieved occupancy %\": {}",
                       e.device, e.stream, e.correlation, k.registers_per_thread, k.shared_memory, k.blocks_per_sm,
                       k.warps_per_sm, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                       k.occupancy_percent);
        if (!e.mangled_name.empty() && e.mangled_name != e.name) {
          put(out_, ", \"mangled name\": ");
          put_string(out_, e.mangled_name);
        }
        if (e.correlation == 0) put(out_, ", \"timing\": \"cuda_events\"");  // CUPTI fallback (cuda_event_fallback.h)
        break;
      }
      case EventKind::memcpy:
      case EventKind::memset: {
        sep();
        fmt::format_to(it, "\"device\": {}, \"context\": 1, \"stream\": {}, \"correlation\": {}, \"bytes\": {}, ",
                       e.device, e.stream, e.correlation, e.bytes);
        const int64_t ns = e.duration_ns();
        if (ns > 0) {
          fmt::format_to(it, "\"memory bandwidth (GB/s)\": {:.6f}", static_cast<double>(e.bytes) / static_cast<double>(ns));
        } else {
          put(out_, "\"memory bandwidth (GB/s)\": \"N/A\"");
        }
        break;
      }
      case EventKind::cuda_sync:  // Kineto's CudaSyncActivity args
        sep();
        put(out_, "\"cuda_sync_kind\": ");
        put_string(out_, e.name);
        if (e.name == "Event Sync" || e.name == "Stream Wait Event")  // the recording stream is not tracked
          fmt::format_to(it, ", \"wait_on_stream\": -1, \"wait_on_cuda_event_record_corr_id\": -1, "
                             "\"wait_on_cuda_event_id\": {}", e.cuda_event_id);
        fmt::format_to(it, ", \"stream\": {}, \"correlation\": {}, \"device\": {}, \"context\": 1", e.stream,
                       e.correlation, e.device);
        break;
      case EventKind::gpu_user_annotation:
      case EventKind::overhead:
      case EventKind::memory:
        break;
    }
    put(out_, "\n    }");
  }

  // record_shapes: the arguments the way torch writes them (Input Dims, types, strides, scalar values).
  void input_args(const Event& e) {
    auto it = std::back_inserter(out_);
    const auto list = [&](const char* key, auto&& item) {
      fmt::format_to(it, ", \"{}\": [", key);
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        if (i) put(out_, ", ");
        item(e.inputs[i]);
      }
      put(out_, "]");
    };
    using Kind = InputMeta::Kind;
    list("Concrete Inputs", [&](const InputMeta& m) {
      if (m.kind == Kind::scalar) {
        put_string(out_, fmt::format("{}", m.value));
      } else {
        put(out_, "\"\"");
      }
    });
    list("Input type", [&](const InputMeta& m) {
      put_string(out_, m.kind == Kind::tensor ? dtype_name(m.dtype) : m.kind == Kind::scalar ? "Scalar" : "");
    });
    list("Input Strides", [&](const InputMeta& m) { put_dims(out_, m.kind == Kind::tensor ? m.strides : Dims{}); });
    list("Input Dims", [&](const InputMeta& m) { put_dims(out_, m.kind == Kind::tensor ? m.shape : Dims{}); });
  }

  void memory(const Event& e, size_t index) {
    fmt::format_to(std::back_inserter(out_),
                   "  {{\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n"
                   "    \"pid\": {}, \"tid\": {},\n    \"ts\": ",
                   r_.pid, e.tid);
    put_ts(e.start_ns);
    fmt::format_to(std::back_inserter(out_),
                   ",\n    \"args\": {{\n      \"Total Reserved\": {}, \"Total Allocated\": {}, \"Bytes\": {}, "
                   "\"Device Id\": {}, \"Device Type\": {}, \"Addr\": {}, \"finished\": false, \"Ev Idx\": {}\n"
                   "    }}\n  }},\n",
                   e.total_reserved, e.total_allocated, e.bytes, e.memory_device.is_cpu() ? -1 : e.memory_device.index,
                   e.memory_device.is_cpu() ? 0 : 1, e.addr, index);
  }

  // The CPU -> GPU arrow: "s" on the launch call, "f" (bound to the enclosing slice) on the GPU work.
  // An arrow joins one "s" to one "f" of the same id, so the k-th piece of work of a correlation (in
  // trace order, from 0) gets the id correlation + k * 2^32: plain correlation ids for ordinary
  // launches, distinct ones for the kernels of a graph launch (CUPTI's correlation ids are 32-bit).
  void flow(const Event& e) {
    if (e.correlation == 0) return;
    auto it = std::back_inserter(out_);
    const auto flow_id = [&](uint64_t k) { return e.correlation + (k << 32); };
    if (e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset ||
        e.kind == EventKind::cuda_sync) {
      fmt::format_to(it, "  {{\n    \"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ",
                     flow_id(flows_ended_[e.correlation]++), e.device, e.stream);
      put_ts(e.start_ns);
      put(out_, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  },\n");
    } else if (e.kind == EventKind::cuda_runtime || e.kind == EventKind::cuda_driver) {
      const auto work = gpu_work_per_correlation_.find(e.correlation);
      if (work == gpu_work_per_correlation_.end()) return;
      for (uint64_t k = 0; k < work->second; ++k) {
        fmt::format_to(it, "  {{\n    \"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", flow_id(k),
                       r_.pid, e.tid);
        put_ts(e.start_ns);
        put(out_, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  },\n");
      }
    }
  }

  void process(int64_t pid, const std::string& name, const std::string& label, int64_t sort_index, int64_t ts) {
    const auto meta = [&](const char* what, const char* key, auto&& value) {
      fmt::format_to(std::back_inserter(out_), "  {{\n    \"name\": \"{}\", \"ph\": \"M\", \"ts\": ", what);
      put_ts(ts);
      fmt::format_to(std::back_inserter(out_), ", \"pid\": {}, \"tid\": 0,\n    \"args\": {{\n      \"{}\": ", pid, key);
      value();
      put(out_, "\n    }\n  },\n");
    };
    meta("process_name", "name", [&] { put_string(out_, name); });
    meta("process_labels", "labels", [&] { put_string(out_, label); });
    meta("process_sort_index", "sort_index", [&] { fmt::format_to(std::back_inserter(out_), "{}", sort_index); });
  }

  void thread(int64_t pid, int64_t tid, const std::string& name, int64_t sort_index, int64_t ts) {
    put(out_, "  {\n    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": ");
    put_ts(ts);
    fmt::format_to(std::back_inserter(out_), ", \"pid\": {}, \"tid\": {},\n    \"args\": {{\n      \"name\": ", pid, tid);
    put_string(out_, name);
    put(out_, "\n    }\n  },\n  {\n    \"name\": \"thread_sort_index\", \"ph\": \"M\", \"ts\": ");
    put_ts(ts);
    fmt::format_to(std::back_inserter(out_),
                   ", \"pid\": {}, \"tid\": {},\n    \"args\": {{\n      \"sort_index\": {}\n    }}\n  }},\n", pid, tid,
                   sort_index);
  }

  const Recording& r_;
  Buffer& out_;
  int64_t base_;
  std::unordered_map<uint64_t, uint64_t> gpu_work_per_correlation_;  // GPU events per correlation
  std::unordered_map<uint64_t, uint64_t> flows_ended_;               // "f" written so far per correlation
};

}  // namespace

const char* category(EventKind kind) {
  switch (kind) {
    case EventKind::cpu_op: return "cpu_op";
    case EventKind::user_annotation: return "user_annotation";
    case EventKind::profiler_step: return "user_annotation";
    case EventKind::memory: return "cpu_instant_event";
    case EventKind::cuda_runtime: return "cuda_runtime";
    case EventKind::cuda_driver: return "cuda_driver";
    case EventKind::kernel: return "kernel";
    case EventKind::memcpy: return "gpu_memcpy";
    case EventKind::memset: return "gpu_memset";
    case EventKind::gpu_user_annotation: return "gpu_user_annotation";
    case EventKind::cuda_sync: return "cuda_sync";
    case EventKind::overhead: return "overhead";
  }
  return "?";
}

namespace {

void write_json(const Recording& recording, const std::string& trace_name, Buffer& out) {
  out.reserve(4096 + recording.events.size() * (recording.record_shapes ? 420 : 260));
  Writer w(recording, out);
  w.index_correlations();
  w.header();
  for (size_t i = 0; i < recording.events.size(); ++i) w.event(recording.events[i], i);
  w.metadata();
  w.footer(trace_name);
}

}  // namespace

std::string chrome_trace_json(const Recording& recording, const std::string& trace_name) {
  Buffer out;
  write_json(recording, trace_name, out);
  return fmt::to_string(out);
}

namespace {

// The gzip file format (RFC 1952, what gzopen writes) of `text`, made in memory.
std::string gzip(std::string_view text) {
  z_stream z{};
  TS_CHECK(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
           "export_chrome_trace: zlib cannot start a gzip stream: {}", z.msg ? z.msg : "out of memory");
  std::string out(deflateBound(&z, text.size()), '\0');
  constexpr size_t kStep = size_t{1} << 30;  // zlib counts bytes in 32-bit unsigned ints
  size_t in = 0, done = 0;
  int status = Z_OK;
  while (status == Z_OK) {
    if (z.avail_in == 0 && in < text.size()) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + in));
      z.avail_in = static_cast<uInt>(std::min(kStep, text.size() - in));
      in += z.avail_in;
    }
    if (done == out.size()) out.resize(out.size() * 2);  // beyond deflateBound: not expected
    z.next_out = reinterpret_cast<Bytef*>(out.data() + done);
    z.avail_out = static_cast<uInt>(std::min(kStep, out.size() - done));
    const uInt room = z.avail_out;
    status = deflate(&z, in == text.size() ? Z_FINISH : Z_NO_FLUSH);
    done += room - z.avail_out;
  }
  deflateEnd(&z);
  TS_CHECK(status == Z_STREAM_END, "export_chrome_trace: zlib's deflate failed (status {})", status);
  out.resize(done);
  return out;
}

}  // namespace

// Through ts::write_file (tensor/file_output.h): the whole trace or nothing, never a planted link
// followed, never a device replaced by a file.
void export_chrome_trace(const Recording& recording, const std::string& path) {
  Buffer json;
  write_json(recording, path, json);
  const std::string_view text(json.data(), json.size());
  if (path.size() > 3 && path.ends_with(".gz")) {
    ts::write_file(path, gzip(text), "export_chrome_trace");
  } else {
    ts::write_file(path, text, "export_chrome_trace");
  }
}

}  // namespace ts::profiler
