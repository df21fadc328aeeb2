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
// exactly one incoming flow (flow ids: the correlation for a launch's first piece
// of GPU work, correlation + k * 2^32 for its k-th, as a CUDA graph launch has
// many), each flow id started once and ended once. Prints what it found; exits 1
// on any violation.
// A file it cannot read as a trace (not a regular file, too large, not JSON, nested too deep, a
// field of another JSON type or out of range; tools/trace_file.h has the rules) gets one line on
// stderr and exit 1; a wrong command line (--steps abc) one line and exit 2.
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

using ts::trace::Event;
using ts::trace::Json;

struct Span {
  int64_t start, end;
  std::string name;
};

struct GpuWork {  // a kernel, memcpy, memset or sync with its launch's correlation
  std::string cat, name;
  int64_t correlation, start;
};

// The violations: the first kShown of them kept, the rest counted (a file of a billion bad events
// costs no memory for them).
struct Report {
  static constexpr size_t kShown = 30;
  std::vector<std::string> errors;
  size_t count = 0;
  template <typename... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) {
    if (count++ < kShown) errors.push_back(fmt::format(format, std::forward<Args>(args)...));
  }
};

constexpr const char* kUsage = "ts_trace_check TRACE.json[.gz] [--steps N]";

int check(const std::string& path, int64_t expected_steps) {
  Report report;
  std::map<std::string, int64_t> by_phase;
  std::map<std::string, int64_t> ops;
  std::map<std::pair<std::string, std::string>, std::vector<Span>> lanes;  // X events per (pid, tid)
  std::set<int64_t> steps;
  int64_t step_events = 0;
  std::map<int64_t, size_t> flow_ends;           // incoming flows by id
  std::map<int64_t, size_t> flow_starts;         // outgoing flows by id
  std::map<int64_t, int64_t> launch_start;       // the first launch call's start by correlation
  std::vector<GpuWork> gpu_work;

  // ---- events, one at a time as the file streams ----
  const ts::trace::Document doc = ts::trace::for_each_event(
      path,
      [&](size_t i, const Json& json) {
        const Event e(json, path, i);
        const std::string shown = e.text("name", "?");
        for (const char* key : {"ph", "name", "pid", "tid"})
          if (!e.has(key)) report.error("event {} ({}) has no \"{}\"", i, shown, key);
        const std::optional<int64_t> ts = e.ts_ns();
        if (!ts) report.error("event {} ({}) has no numeric ts", i, shown);
        const std::optional<std::string> ph = e.optional_text("ph");
        if (!ph || !e.has("pid") || !e.has("tid") || !ts) return;
        const std::string name = e.text("name");
        const std::string cat = e.text("cat");
        // Phases by name; past 64 names (no real trace has them) the rest count together.
        by_phase[by_phase.size() < 64 || by_phase.contains(*ph) ? *ph : std::string("(other phases)")] += 1;
        if (*ph == "X") {
          const std::optional<int64_t> dur = e.time_ns("dur", -ts::trace::kMaxDurUs, ts::trace::kMaxDurUs);
          if (!dur || *dur < 0) {
            report.error("duration event {} ({}) has no dur >= 0", i, name);
            return;
          }
          if (cat.empty()) report.error("duration event {} ({}) has no cat", i, name);
          lanes[{e.lane_id("pid"), e.lane_id("tid")}].push_back({*ts, *ts + *dur, name});
          const Event args = e.object("args");
          if (cat == "cpu_op") {
            ops[name] += 1;
            if (!args.integer("External id")) report.error("cpu_op event {} ({}) has no External id", i, name);
          }
          // The step itself is the CPU's user_annotation; a GPU lane can hold a gpu_user_annotation of
          // the same name (the span of the kernels launched directly under the step).
          if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) {
            ++step_events;
            int64_t number = 0;
            if (!ts::trace::parse_whole_number(name.substr(13), 0, int64_t{1} << 62, &number).empty())
              report.error("event {}: '{}' has no step number", i, name);
            else if (!steps.insert(number).second)
              report.error("{} appears twice", name);
          }
          // GPU work timed with CUDA events (CUPTI could not start) has no launch call to link.
          const bool event_timed = args.text("timing") == "cuda_events";
          const bool gpu =
              (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync") && !event_timed;
          const bool launch = cat == "cuda_runtime" || cat == "cuda_driver";
          const std::optional<int64_t> correlation = args.integer("correlation");
          if ((gpu || launch) && correlation) {
            if (gpu) gpu_work.push_back({cat, name, *correlation, *ts});
            if (launch) launch_start.try_emplace(*correlation, *ts);
          } else if (gpu) {
            report.error("{} event {} ({}) has no correlation", cat, i, name);
          }
        } else if (*ph == "s" || *ph == "f") {
          const std::optional<int64_t> id = e.integer("id");
          if (!id) {
            report.error("flow event {} has no id", i);
            return;
          }
          (*ph == "f" ? flow_ends : flow_starts)[*id] += 1;
        } else if (*ph != "i" && *ph != "M" && *ph != "C" && *ph != "B" && *ph != "E") {
          report.error("event {} ({}) has an unknown ph \"{}\"", i, name, *ph);
        }
      },
      "\"rank\":", 2);
  fmt::print("ts_trace_check: {} ({} bytes)\n", path, doc.bytes);

  // ---- top level ----
  if (doc.root_type != "object") {
    fmt::print("  the top level is not an object\nFAILED\n");
    return 1;
  }
  const Json& trace = doc.top;
  const std::vector<std::string> required{"schemaVersion", "deviceProperties", "distributedInfo", "displayTimeUnit",
                                          "baseTimeNanoseconds", "traceEvents", "traceName"};
  for (const std::string& key : required)
    if (!trace.contains(key)) report.error("missing top-level key \"{}\"", key);
  const auto events_at = std::find(doc.keys.begin(), doc.keys.end(), "traceEvents");
  for (auto it = events_at == doc.keys.end() ? doc.keys.end() : events_at + 1; it != doc.keys.end(); ++it)
    if (*it != "traceName") report.error("top-level key \"{}\" comes after traceEvents (HTA would not see it)", *it);
  if (trace.contains("deviceProperties") && !trace["deviceProperties"].is_array())
    report.error("deviceProperties is not a list");
  if (trace.contains("baseTimeNanoseconds") && !trace["baseTimeNanoseconds"].is_number_integer())
    report.error("baseTimeNanoseconds is not an integer");
  if (!doc.probe_match || (*doc.probe_match)[0] != ' ' || !std::isdigit(static_cast<unsigned char>((*doc.probe_match)[1])))
    report.error("no \"rank\": <space><digits> for HTA's rank regex (write \"distributedInfo\": {{\"rank\": 0}})");
  if (!doc.has_event_list) {
    for (const std::string& e : report.errors) fmt::print("  error: {}\n", e);
    fmt::print("FAILED\n");
    return 1;
  }

  // Duration events of one lane: each either inside the one enclosing it or after it.
  size_t max_depth = 0;
  for (auto& [lane, spans] : lanes) {
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const Span*> open;
    for (const Span& s : spans) {
      while (!open.empty() && s.start >= open.back()->end) open.pop_back();
      if (!open.empty() && s.end > open.back()->end) {
        report.error("pid {} tid {}: \"{}\" [{}, {}] ns overlaps \"{}\" [{}, {}] ns without nesting", lane.first,
                     lane.second, s.name, s.start, s.end, open.back()->name, open.back()->start, open.back()->end);
        continue;
      }
      open.push_back(&s);
      max_depth = std::max(max_depth, open.size());
    }
  }

  // Steps: numbered without gaps.
  if (!steps.empty() && *steps.rbegin() - *steps.begin() + 1 != static_cast<int64_t>(steps.size()))
    report.error("ProfilerStep numbers have gaps: #{}..#{} but {} steps", *steps.begin(), *steps.rbegin(), steps.size());
  if (expected_steps >= 0 && step_events != expected_steps)
    report.error("expected {} ProfilerStep events, found {}", expected_steps, step_events);

  // GPU work: one incoming flow, after its launch. The k-th piece of work of a correlation ends the
  // flow whose id is correlation + k * 2^32; which k is which does not matter, that each is there once.
  std::map<int64_t, int64_t> work_seen;  // pieces of GPU work so far by correlation
  for (const GpuWork& w : gpu_work) {
    const int64_t k = work_seen[w.correlation]++;
    const int64_t id = k < (int64_t{1} << 30) && w.correlation >= 0 && w.correlation < (int64_t{1} << 32)
                           ? w.correlation + (k << 32)
                           : -1;
    const auto in = flow_ends.find(id);
    const size_t incoming = in == flow_ends.end() ? 0 : in->second;
    const auto out = flow_starts.find(id);
    const size_t outgoing = out == flow_starts.end() ? 0 : out->second;
    if (incoming != 1 || outgoing != 1)
      report.error("{} \"{}\" (correlation {}, flow id {}) has {} incoming flows from {} flow starts, expected 1 and 1",
                   w.cat, w.name, w.correlation, id, incoming, outgoing);
    const auto launch = launch_start.find(w.correlation);
    if (launch == launch_start.end()) {
      report.error("{} \"{}\" (correlation {}) has no launch call", w.cat, w.name, w.correlation);
    } else if (w.start < launch->second) {
      report.error("{} \"{}\" starts before its launch call", w.cat, w.name);
    }
  }

  fmt::print("  events: {} (", doc.events);
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
  fmt::print("\n  GPU work: {} (launch calls {})\n", gpu_work.size(), launch_start.size());
  if (trace.contains("dropped_events")) fmt::print("  dropped events: {}\n", trace["dropped_events"].dump());
  if (trace.contains("cuda_activity")) fmt::print("  cuda activity: {}\n", trace["cuda_activity"].dump());
  for (const std::string& error : report.errors) fmt::print("  error: {}\n", error);
  if (report.count > Report::kShown) fmt::print("  ... {} more errors\n", report.count - Report::kShown);
  fmt::print("{}\n", report.count == 0 ? "OK" : "FAILED");
  return report.count == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int64_t expected_steps = -1;
  CLI::App app{"Checks that a Chrome trace reads like Kineto's and is well formed.", "ts_trace_check"};
  app.add_option("trace", path, "the trace: JSON, plain or gzip (.gz)")->required()->option_text("TRACE.json[.gz]");
  app.add_option("--steps", expected_steps, "how many ProfilerStep#N events it must have (default: any number)")
      ->check(ts::trace::whole_number(0, 1'000'000))
      ->option_text("N");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("ts_trace_check: {} (usage: {})\n", e.what(), kUsage);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return check(path, expected_steps);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ts_trace_check: {}: out of memory\n", path);
  } catch (const std::exception& e) {  // ts::trace::Error: a file it cannot read as a trace, in one line
    fmt::print(stderr, "ts_trace_check: {}\n", e.what());
  }
  return 1;
}
