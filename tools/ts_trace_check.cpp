// tools/ts_trace_check.cpp: checks that a Chrome trace reads like Kineto's and is well formed.
//
//   ts_trace_check traces/01_matmul_add/64_bf16_cold_eager.json [--steps 3]
//
// Checks: valid JSON (plain or gzip) with the top-level keys torch.profiler
// writes, metadata before "traceEvents" (HTA reads only that far) and a rank
// HTA can find; every event has ph/name/pid/tid/ts, duration events a cat and
// a dur >= 0; duration events on one pid/tid are strictly nested or disjoint
// (what Perfetto needs to draw them); ProfilerStep#N numbers are unique and
// consecutive (and as many as --steps says); cpu_op events carry an External
// id; every kernel, memcpy, memset and sync starts after its API call and has
// exactly one incoming flow. Prints what it found; exits 1 on any violation.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tools/trace_file.h"

namespace {

using ts::trace::Json;
using ts::trace::read_file;
using ts::trace::to_ns;

std::string lane_name(const Json& pid, const Json& tid) { return fmt::format("pid {} tid {}", pid.dump(), tid.dump()); }

struct Span {
  int64_t start, end;
  size_t index;
};

struct Report {
  std::vector<std::string> errors;
  template <typename... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) {
    errors.push_back(fmt::format(format, std::forward<Args>(args)...));
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int expected_steps = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--steps" && i + 1 < argc) {
      expected_steps = std::stoi(argv[++i]);
    } else if (arg == "-h" || arg == "--help") {
      fmt::print("usage: ts_trace_check TRACE.json[.gz] [--steps N]\n");
      return 0;
    } else {
      path = arg;
    }
  }
  if (path.empty()) {
    fmt::print(stderr, "usage: ts_trace_check TRACE.json[.gz] [--steps N]\n");
    return 2;
  }

  std::string text;
  if (!read_file(path, &text)) {
    fmt::print(stderr, "ts_trace_check: cannot read {}\n", path);
    return 1;
  }
  Json trace;
  try {
    trace = Json::parse(text);
  } catch (const std::exception& e) {
    fmt::print("ts_trace_check: {}: not valid JSON: {}\nFAILED\n", path, e.what());
    return 1;
  }
  Report report;
  fmt::print("ts_trace_check: {} ({} bytes)\n", path, text.size());

  // ---- top level ----
  if (!trace.is_object()) {
    fmt::print("  the top level is not an object\nFAILED\n");
    return 1;
  }
  const std::vector<std::string> required{"schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit",
                                          "baseTimeNanoseconds", "traceEvents", "traceName"};
  for (const std::string& key : required)
    if (!trace.contains(key)) report.error("missing top-level key \"{}\"", key);
  std::vector<std::string> keys;
  for (const auto& item : trace.items()) keys.push_back(item.key());
  const auto events_at = std::find(keys.begin(), keys.end(), "traceEvents");
  for (auto it = events_at == keys.end() ? keys.end() : events_at + 1; it != keys.end(); ++it)
    if (*it != "traceName") report.error("top-level key \"{}\" comes after traceEvents (HTA would not see it)", *it);
  if (trace.contains("deviceProperties") && !trace["deviceProperties"].is_array())
    report.error("deviceProperties is not a list");
  if (trace.contains("baseTimeNanoseconds") && !trace["baseTimeNanoseconds"].is_number_integer())
    report.error("baseTimeNanoseconds is not an integer");
  const size_t rank_at = text.find("\"rank\":");
  if (rank_at == std::string::npos || rank_at + 8 >= text.size() || text[rank_at + 7] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(text[rank_at + 8])))
    report.error("no \"rank\": <space><digits> for HTA's rank regex (write \"distributedInfo\": {{\"rank\": 0}})");
  if (!trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    for (const std::string& e : report.errors) fmt::print("  error: {}\n", e);
    fmt::print("FAILED\n");
    return 1;
  }

  // ---- events ----
  const Json& events = trace["traceEvents"];
  std::map<std::string, int64_t> by_phase;
  std::map<std::string, int64_t> ops;
  std::map<std::pair<std::string, std::string>, std::vector<Span>> lanes;  // X events per (pid, tid)
  std::set<int64_t> steps;
  int64_t step_events = 0;
  std::map<uint64_t, std::vector<size_t>> flow_starts, flow_ends, launches;
  std::vector<size_t> gpu_work;
  for (size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    if (!e.is_object()) {
      report.error("event {} is not an object", i);
      continue;
    }
    for (const char* key : {"ph", "name", "pid", "tid"})
      if (!e.contains(key)) report.error("event {} ({}) has no \"{}\"", i, e.value("name", "?"), key);
    if (!e.contains("ts") || !e["ts"].is_number()) report.error("event {} ({}) has no numeric ts", i, e.value("name", "?"));
    if (!e.contains("ph") || !e["ph"].is_string() || !e.contains("pid") || !e.contains("tid") || !e.contains("ts"))
      continue;
    const std::string ph = e["ph"].get<std::string>();
    const std::string name = e.value("name", "");
    const std::string cat = e.value("cat", "");
    by_phase[ph] += 1;
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<long double>() < 0) {
        report.error("duration event {} ({}) has no dur >= 0", i, name);
        continue;
      }
      if (cat.empty()) report.error("duration event {} ({}) has no cat", i, name);
      const int64_t start = to_ns(e["ts"]);
      lanes[{e["pid"].dump(), e["tid"].dump()}].push_back({start, start + to_ns(e["dur"]), i});
      if (cat == "cpu_op") {
        ops[name] += 1;
        if (!e.contains("args") || !e["args"].contains("External id"))
          report.error("cpu_op event {} ({}) has no External id", i, name);
      }
      // The step itself is the CPU's user_annotation; a GPU lane can hold a gpu_user_annotation of
      // the same name (the span of the kernels launched directly under the step).
      if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) {
        ++step_events;
        try {
          if (!steps.insert(std::stoll(name.substr(13))).second) report.error("{} appears twice", name);
        } catch (const std::exception&) {
          report.error("event {}: '{}' has no step number", i, name);
        }
      }
      // GPU work timed with CUDA events (CUPTI could not start) has no launch call to link.
      const bool event_timed = e.contains("args") && e["args"].value("timing", "") == "cuda_events";
      const bool gpu =
          (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync") && !event_timed;
      const bool launch = cat == "cuda_runtime" || cat == "cuda_driver";
      if ((gpu || launch) && e.contains("args") && e["args"].contains("correlation")) {
        const auto correlation = e["args"]["correlation"].get<uint64_t>();
        if (gpu) gpu_work.push_back(i);
        if (launch) launches[correlation].push_back(i);
      } else if (gpu) {
        report.error("{} event {} ({}) has no correlation", cat, i, name);
      }
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id")) {
        report.error("flow event {} has no id", i);
        continue;
      }
      (ph == "s" ? flow_starts : flow_ends)[e["id"].get<uint64_t>()].push_back(i);
    } else if (ph != "i" && ph != "M" && ph != "C" && ph != "B" && ph != "E") {
      report.error("event {} ({}) has an unknown ph \"{}\"", i, name, ph);
    }
  }

  // Duration events of one lane: each either inside the one enclosing it or after it.
  size_t max_depth = 0;
  for (auto& [lane, spans] : lanes) {
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<Span> open;
    for (const Span& s : spans) {
      while (!open.empty() && s.start >= open.back().end) open.pop_back();
      if (!open.empty() && s.end > open.back().end) {
        report.error("{}: \"{}\" [{}, {}] ns overlaps \"{}\" [{}, {}] ns without nesting", lane_name(lane.first, lane.second),
                     events[s.index].value("name", "?"), s.start, s.end, events[open.back().index].value("name", "?"),
                     open.back().start, open.back().end);
        continue;
      }
      open.push_back(s);
      max_depth = std::max(max_depth, open.size());
    }
  }

  // Steps: numbered without gaps.
  if (!steps.empty() && *steps.rbegin() - *steps.begin() + 1 != static_cast<int64_t>(steps.size()))
    report.error("ProfilerStep numbers have gaps: #{}..#{} but {} steps", *steps.begin(), *steps.rbegin(), steps.size());
  if (expected_steps >= 0 && step_events != expected_steps)
    report.error("expected {} ProfilerStep events, found {}", expected_steps, step_events);

  // GPU work: one incoming flow, after its launch.
  for (size_t i : gpu_work) {
    const Json& e = events[i];
    const auto correlation = e["args"]["correlation"].get<uint64_t>();
    const size_t incoming = flow_ends.contains(correlation) ? flow_ends[correlation].size() : 0;
    if (incoming != 1) report.error("{} \"{}\" (correlation {}) has {} incoming flows, expected 1", e.value("cat", ""),
                                    e.value("name", ""), correlation, incoming);
    if (!launches.contains(correlation)) {
      report.error("{} \"{}\" (correlation {}) has no launch call", e.value("cat", ""), e.value("name", ""), correlation);
    } else if (to_ns(e["ts"]) < to_ns(events[launches[correlation].front()]["ts"])) {
      report.error("{} \"{}\" starts before its launch call", e.value("cat", ""), e.value("name", ""));
    }
  }

  fmt::print("  events: {} (", events.size());
  bool first = true;
  for (const auto& [ph, count] : by_phase) {
    fmt::print("{}{} {}", first ? "" : ", ", ph, count);
    first = false;
  }
  fmt::print(")\n  lanes: {} (deepest nesting {})\n", lanes.size(), max_depth);
  if (steps.empty()) {
    fmt::print("  ProfilerStep: none\n");
  } else {
    fmt::print("  ProfilerStep: #{}..#{} ({} steps)\n", *steps.begin(), *steps.rbegin(), steps.size());
  }
  fmt::print("  cpu_op:");
  for (const auto& [name, count] : ops) fmt::print(" {} x{}", name, count);
  fmt::print("\n  GPU work: {} (launch calls {})\n", gpu_work.size(), launches.size());
  if (trace.contains("dropped_events")) fmt::print("  dropped events: {}\n", trace["dropped_events"].dump());
  if (trace.contains("cuda_activity")) fmt::print("  cuda activity: {}\n", trace["cuda_activity"].dump());
  for (size_t i = 0; i < report.errors.size() && i < 30; ++i) fmt::print("  error: {}\n", report.errors[i]);
  if (report.errors.size() > 30) fmt::print("  ... {} more errors\n", report.errors.size() - 30);
  fmt::print("{}\n", report.errors.empty() ? "OK" : "FAILED");
  return report.errors.empty() ? 0 : 1;
}
