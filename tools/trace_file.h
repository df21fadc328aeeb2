// tools/trace_file.h: reading a Chrome trace (Kineto's JSON, plain or gzip) for the tools in tools/.
//
// Two layers, header-only (the tools link fmt, nlohmann_json and zlib, not the runtime):
//   read_file, to_ns, Json       the bytes and the numbers, as ts_trace_check needs them
//   load_trace -> Trace          the duration events ("ph": "X") with their nesting per
//                                thread, the ac2g flows and the lane names, as
//                                ts_trace_svg and ts_trace_diff need them
// Every failure is reported as one line in `why`; nothing here throws to the caller.
#pragma once

#include <fmt/core.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ts::trace {

// Timestamps parsed as long double: microseconds with three decimals near 5e12
// need more than a double's 53 bits to stay exact to the nanosecond.
using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t, std::uint64_t,
                                  long double>;

// The whole file; zlib reads gzip and plain files alike. False when it cannot be read.
inline bool read_file(const std::string& path, std::string* text) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) text->append(chunk, static_cast<size_t>(n));
  const bool ok = n == 0;
  gzclose(f);
  return ok;
}

// A trace's microseconds (three decimals) as integer nanoseconds.
inline int64_t to_ns(const Json& us) { return static_cast<int64_t>(std::llround(us.get<long double>() * 1000.0L)); }

// ---- the event model of ts_trace_svg and ts_trace_diff ---------------------------------

// One duration event ("ph": "X").
struct Slice {
  size_t index = 0;           // position in traceEvents
  std::string cat, name;
  std::string pid, tid;       // as the JSON writes them: numbers (1299, 7, -1) or strings ("Spans")
  int64_t start_ns = 0, end_ns = 0;
  int64_t external_id = -1;   // args["External id"]: an op's id; GPU work and launch calls carry their op's; -1: none
  int64_t correlation = -1;   // args["correlation"]: shared by a launch call and what it launched; -1: none
  int parent = -1;            // the innermost slice enclosing it on the same pid/tid (index in Trace::slices)

  int64_t duration_ns() const { return end_ns - start_ns; }
};

// An ac2g flow: "s" on the launch call's thread, "f" on the GPU lane, both at their slices' starts.
struct Flow {
  int64_t id = 0;
  std::string from_pid, from_tid, to_pid, to_tid;
  int64_t from_ns = 0, to_ns = 0;
};

// A (pid, tid) pair's names and order, from the "M" events Kineto writes.
struct LaneInfo {
  std::string process_label;  // process_labels: "CPU", "GPU 0"
  std::string process_name;   // "03_mlp"
  std::string thread_name;    // "thread 1299 (03_mlp)", "stream 7", "Device 0"
  int64_t process_sort = 0, thread_sort = 0;
};

struct Trace {
  std::string path;
  std::vector<Slice> slices;  // (start, -end) order, ties in file order; a parent comes before its children
  std::vector<Flow> flows;    // complete pairs only, by id
  std::map<std::pair<std::string, std::string>, LaneInfo> lanes;  // every (pid, tid) a slice sits on
};

// Kineto's categories, grouped as the tools read them.
inline bool is_cpu_range(const std::string& cat) {  // a scope or API call on a CPU thread
  return cat == "cpu_op" || cat == "user_annotation" || cat == "cuda_runtime" || cat == "cuda_driver";
}
inline bool is_gpu_work(const std::string& cat) {  // device time: what "Self CUDA" adds up
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}
inline bool on_gpu_lane(const std::string& cat) {
  return is_gpu_work(cat) || cat == "gpu_user_annotation" || cat == "cuda_sync";
}
inline bool is_step(const Slice& s) { return s.cat == "user_annotation" && s.name.starts_with("ProfilerStep#"); }

namespace detail {

inline std::string trim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// An id field: an integer, or absent (-1). False when present but not an integer.
inline bool read_id(const Json& args, const char* key, int64_t* out) {
  if (!args.is_object() || !args.contains(key)) return true;
  const Json& v = args[key];
  if (!v.is_number_integer()) return false;
  *out = v.get<int64_t>();
  return true;
}

// The events of a parsed traceEvents list (see load_trace). Throws nlohmann's errors on fields of
// an unexpected type; load_trace turns them into one line.
inline bool read_events(const Json& events, Trace* trace, std::string* why) {
  std::map<int64_t, Flow> starts, ends;
  std::map<std::string, LaneInfo> process;                             // by pid
  std::map<std::pair<std::string, std::string>, LaneInfo> thread;      // by (pid, tid)
  for (size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) continue;
    const std::string ph = e["ph"].get<std::string>();
    const std::string pid = e.contains("pid") ? e["pid"].dump() : "", tid = e.contains("tid") ? e["tid"].dump() : "";
    if (ph == "M") {
      const Json args = e.value("args", Json::object());
      const std::string what = e.value("name", "");
      const auto text = [&](const char* key) {
        return args.contains(key) && args[key].is_string() ? args[key].get<std::string>() : std::string();
      };
      const bool has_sort = args.contains("sort_index") && args["sort_index"].is_number_integer();
      LaneInfo& p = process[pid];
      if (what == "process_labels") p.process_label = text("labels");
      if (what == "process_name") p.process_name = text("name");
      if (what == "process_sort_index" && has_sort) p.process_sort = args["sort_index"].get<int64_t>();
      if (what == "thread_name") thread[{pid, tid}].thread_name = detail::trim(text("name"));
      if (what == "thread_sort_index" && has_sort) thread[{pid, tid}].thread_sort = args["sort_index"].get<int64_t>();
      continue;
    }
    if (ph == "s" || ph == "f") {
      if (e.value("cat", "") != "ac2g" || !e.contains("id") || !e["id"].is_number_integer() || !e.contains("ts") ||
          !e["ts"].is_number())
        continue;
      Flow& flow = (ph == "s" ? starts : ends)[e["id"].get<int64_t>()];
      flow.id = e["id"].get<int64_t>();
      (ph == "s" ? flow.from_pid : flow.to_pid) = pid;
      (ph == "s" ? flow.from_tid : flow.to_tid) = tid;
      (ph == "s" ? flow.from_ns : flow.to_ns) = to_ns(e["ts"]);
      continue;
    }
    if (ph != "X") continue;
    Slice s;
    s.index = i;
    s.name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    s.cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number() ||
        e["dur"].get<long double>() < 0) {
      *why = fmt::format("{}: event {} (\"{}\") has no numeric ts and dur >= 0", trace->path, i, s.name);
      return false;
    }
    s.pid = pid;
    s.tid = tid;
    s.start_ns = to_ns(e["ts"]);
    s.end_ns = s.start_ns + to_ns(e["dur"]);
    const Json args = e.value("args", Json::object());
    if (!detail::read_id(args, "External id", &s.external_id) || !detail::read_id(args, "correlation", &s.correlation)) {
      *why = fmt::format("{}: event {} (\"{}\") has a non-integer External id or correlation", trace->path, i, s.name);
      return false;
    }
    trace->slices.push_back(std::move(s));
  }
  // Lanes: every (pid, tid) a slice sits on, named by its process's and its thread's metadata.
  for (const Slice& s : trace->slices) {
    LaneInfo info = process[s.pid];
    info.thread_name = thread[{s.pid, s.tid}].thread_name;
    info.thread_sort = thread[{s.pid, s.tid}].thread_sort;
    trace->lanes.try_emplace({s.pid, s.tid}, info);
  }
  for (const auto& [id, from] : starts) {
    const auto to = ends.find(id);
    if (to == ends.end()) continue;
    Flow flow = from;
    flow.to_pid = to->second.to_pid;
    flow.to_tid = to->second.to_tid;
    flow.to_ns = to->second.to_ns;
    trace->flows.push_back(flow);
  }

  // (start, -end) order, then nesting per lane: each slice's parent is the innermost open one
  // that has not ended before it starts. A slice that overlaps without nesting (ts_trace_check
  // reports those) still gets the open one as its parent, so that it is drawn below it.
  std::stable_sort(trace->slices.begin(), trace->slices.end(), [](const Slice& a, const Slice& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::map<std::pair<std::string, std::string>, std::vector<int>> open;
  for (size_t i = 0; i < trace->slices.size(); ++i) {
    Slice& s = trace->slices[i];
    std::vector<int>& stack = open[{s.pid, s.tid}];
    while (!stack.empty() && s.start_ns >= trace->slices[static_cast<size_t>(stack.back())].end_ns) stack.pop_back();
    s.parent = stack.empty() ? -1 : stack.back();
    stack.push_back(static_cast<int>(i));
  }
  return true;
}

}  // namespace detail

// Reads and parses `path` into `trace`. False, with one line in `why`, when the file cannot be
// read, is not JSON, or is not a Chrome trace (no traceEvents list, an X event without numeric
// ts and dur >= 0).
inline bool load_trace(const std::string& path, Trace* trace, std::string* why) {
  std::string text;
  if (!read_file(path, &text)) {
    *why = fmt::format("cannot read {}", path);
    return false;
  }
  Json json;
  try {
    json = Json::parse(text);
  } catch (const std::exception& e) {
    *why = fmt::format("{}: not valid JSON: {}", path, e.what());
    return false;
  }
  if (!json.is_object() || !json.contains("traceEvents") || !json["traceEvents"].is_array()) {
    *why = fmt::format("{}: not a Chrome trace (no \"traceEvents\" list)", path);
    return false;
  }
  trace->path = path;
  try {
    return detail::read_events(json["traceEvents"], trace, why);
  } catch (const std::exception& e) {  // a field of an unexpected type
    *why = fmt::format("{}: malformed event: {}", path, e.what());
    return false;
  }
}

}  // namespace ts::trace
