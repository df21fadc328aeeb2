// tools/ts_trace_diff.cpp: what changed between two profiles of the same program.
//
//   ts_trace_diff before.json after.json [--steps]
//
// Edit a kernel, profile again, and ask what moved: for every op (cpu_op,
// user_annotation, the runtime and driver calls) and every piece of GPU work
// (kernel, memcpy, memset), one row with its calls, Self CPU and Self CUDA
// before and after, the change (after - before) and the ratio (after / before),
// sorted by the largest absolute change; then the rows that appeared (after
// only) and vanished (before only). Rows are named and measured the way
// key_averages() makes the table (profiler/key_averages.cpp), from the trace
// alone:
//   Self CPU   a slice's duration minus its direct children's on the same thread
//   Self CUDA  of an op: the GPU work carrying its External id (launched while it
//              was the innermost op); of a kernel, memcpy or memset: its duration
//   ProfilerStep#N rows fold into "ProfilerStep*"; an only child with its
//   parent's name folds into the parent (PyTorch's _remove_dup_nodes).
// GPU annotations and syncs are left out, as in the table. Traces may be plain
// or gzip JSON. --steps: only what lies inside a ProfilerStep (CPU slices
// within a step, GPU work launched from one), averaged per step of each trace.
// When neither trace has device activity (a CPU run, or --activities cpu: no
// GPU work, no CUDA call), the Self CUDA columns and total would be zeros
// throughout: they are left out, and a line under the header says so.
// Exits 1 with one line on stderr when a trace cannot be read (tools/trace_file.h says which files
// it refuses: wrong field types, nesting, size), 2 on a wrong command line.
// Times add up in double: exact to the nanosecond below 2^53 ns (104 days), and never overflowing
// on a trace whose durations could not be real.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tools/trace_file.h"

namespace {

using ts::trace::Slice;
using ts::trace::Trace;

struct Row {
  double calls = 0;
  double self_cpu_ns = 0, self_cuda_ns = 0;
};

using Key = std::pair<std::string, std::string>;  // (kind, name)

struct Profile {
  std::map<Key, Row> rows;
  int64_t steps = 0;
  int64_t first_step = 0, last_step = 0;
  double self_cpu_total_ns = 0, self_cuda_total_ns = 0;
};

// The rows of one trace (see the header). With `in_steps`, only slices inside a ProfilerStep.
Profile profile(const Trace& trace, bool in_steps) {
  const std::vector<Slice>& s = trace.slices;
  const size_t n = s.size();
  Profile out;

  // Steps, and which CPU slices lie in one (a step is a top-level slice of its thread).
  std::vector<bool> in_step(n, !in_steps);
  for (size_t i = 0; i < n; ++i) {
    if (!ts::trace::is_step(s[i])) continue;
    int64_t number = 0;  // "ProfilerStep#" without a number: counted, numbered 0
    if (!ts::trace::parse_whole_number(s[i].name.substr(13), INT64_MIN, INT64_MAX, &number).empty()) number = 0;
    out.first_step = out.steps == 0 ? number : std::min(out.first_step, number);
    out.last_step = out.steps == 0 ? number : std::max(out.last_step, number);
    ++out.steps;
  }
  if (in_steps) {
    for (size_t i = 0; i < n; ++i) {
      if (!ts::trace::is_cpu_range(s[i].cat)) continue;
      for (int p = static_cast<int>(i); p >= 0; p = s[static_cast<size_t>(p)].parent)
        if (ts::trace::is_step(s[static_cast<size_t>(p)])) in_step[i] = true;
    }
  }

  // The CPU tree (CPU ranges only, as key_averages builds it).
  std::vector<int> parent(n, -1);
  std::vector<std::vector<int>> children(n);
  for (size_t i = 0; i < n; ++i) {
    if (!ts::trace::is_cpu_range(s[i].cat) || s[i].parent < 0) continue;
    if (!ts::trace::is_cpu_range(s[static_cast<size_t>(s[i].parent)].cat)) continue;
    parent[i] = s[i].parent;
    children[static_cast<size_t>(s[i].parent)].push_back(static_cast<int>(i));
  }

  // GPU work charged to the cpu_op whose External id it carries; a launch call in a step
  // puts its GPU work in the step.
  std::map<int64_t, size_t> op_by_id, launch_by_correlation;
  for (size_t i = 0; i < n; ++i) {
    if (s[i].cat == "cpu_op" && s[i].external_id >= 0) op_by_id.emplace(s[i].external_id, i);
    if ((s[i].cat == "cuda_runtime" || s[i].cat == "cuda_driver") && s[i].correlation >= 0)
      launch_by_correlation.emplace(s[i].correlation, i);
  }
  std::vector<double> kernel_ns(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!ts::trace::is_gpu_work(s[i].cat)) continue;
    if (in_steps) {
      const auto launch = launch_by_correlation.find(s[i].correlation);
      in_step[i] = launch != launch_by_correlation.end() && in_step[launch->second];
    }
    if (s[i].external_id < 0) continue;
    if (const auto op = op_by_id.find(s[i].external_id); op != op_by_id.end())
      kernel_ns[op->second] += static_cast<double>(s[i].duration_ns());
  }

  // PyTorch's _remove_dup_nodes: an only child with its parent's name folds into the parent.
  std::vector<bool> alive(n, true);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      const int p = parent[i];
      if (!alive[i] || p < 0 || children[static_cast<size_t>(p)].size() != 1 || s[static_cast<size_t>(p)].name != s[i].name)
        continue;
      children[static_cast<size_t>(p)] = children[i];
      kernel_ns[static_cast<size_t>(p)] = kernel_ns[i];
      for (int c : children[static_cast<size_t>(p)]) parent[static_cast<size_t>(c)] = p;
      alive[i] = false;
      changed = true;
    }
  }

  for (size_t i = 0; i < n; ++i) {
    const Slice& e = s[i];
    const bool cpu = ts::trace::is_cpu_range(e.cat), gpu = ts::trace::is_gpu_work(e.cat);
    if (!alive[i] || !in_step[i] || (!cpu && !gpu)) continue;
    Row& row = out.rows[{e.cat, ts::trace::is_step(e) ? std::string("ProfilerStep*") : e.name}];
    row.calls += 1;
    if (gpu) {
      row.self_cuda_ns += static_cast<double>(e.duration_ns());
      out.self_cuda_total_ns += static_cast<double>(e.duration_ns());
      continue;
    }
    double self = static_cast<double>(e.duration_ns());
    for (int c : children[i]) self -= static_cast<double>(s[static_cast<size_t>(c)].duration_ns());
    row.self_cpu_ns += self;
    row.self_cuda_ns += kernel_ns[i];
    out.self_cpu_total_ns += self;
  }
  return out;
}

// Anything the GPU did (kernels, copies, memsets, GPU annotations, syncs) or a CUDA call.
bool has_device_activity(const Trace& trace) {
  for (const Slice& s : trace.slices)
    if (ts::trace::on_gpu_lane(s.cat) || s.cat == "cuda_runtime" || s.cat == "cuda_driver") return true;
  return false;
}

std::string us(double ns) { return fmt::format("{:.3f}", ns / 1000.0); }

std::string ratio(double before, double after) {
  if (before == 0) return after == 0 ? "-" : "new";
  if (after == 0) return "gone";
  return fmt::format("{:.2f}x", after / before);
}

std::string describe(const std::string& path, const Profile& p) {
  if (p.steps == 0) return fmt::format("{} (no ProfilerStep)", path);
  return fmt::format("{} (ProfilerStep #{}..#{}, {} steps)", path, p.first_step, p.last_step, p.steps);
}

constexpr const char* kUsage = "ts_trace_diff BEFORE.json[.gz] AFTER.json[.gz] [--steps]";

int bad_usage(const std::string& message) {  // one line, exit 2
  fmt::print(stderr, "ts_trace_diff: {} (usage: {})\n", message, kUsage);
  return 2;
}

}  // namespace

int run(int argc, char** argv) {
  std::vector<std::string> paths;
  bool per_step = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      fmt::print("usage: {}\n", kUsage);
      return 0;
    }
    if (arg == "--steps") {
      per_step = true;
    } else if (arg.starts_with("-")) {
      return bad_usage(fmt::format("unknown option {}", arg));
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.size() != 2) return bad_usage(fmt::format("expected two traces, got {}", paths.size()));

  Trace traces[2];
  Profile profiles[2];
  for (int t = 0; t < 2; ++t) {
    traces[t] = ts::trace::load_trace(paths[static_cast<size_t>(t)]);
    profiles[t] = profile(traces[t], per_step);
    if (per_step && profiles[t].steps == 0) {
      fmt::print(stderr, "ts_trace_diff: --steps: {} has no ProfilerStep#N events\n", paths[static_cast<size_t>(t)]);
      return 1;
    }
  }
  const Profile& before = profiles[0];
  const Profile& after = profiles[1];
  const bool cuda = has_device_activity(traces[0]) || has_device_activity(traces[1]);  // the Self CUDA columns
  const double scale_before = per_step ? static_cast<double>(before.steps) : 1.0;
  const double scale_after = per_step ? static_cast<double>(after.steps) : 1.0;

  struct Line {
    Key key;
    Row b, a;
    bool in_before, in_after;
    double d_cpu, d_cuda;
  };
  std::vector<Line> lines;
  std::map<Key, bool> keys;
  for (const auto& [key, row] : before.rows) keys[key] = true;
  for (const auto& [key, row] : after.rows) keys[key] = true;
  for (const auto& [key, unused] : keys) {
    Line line{key, {}, {}, before.rows.contains(key), after.rows.contains(key), 0, 0};
    if (line.in_before) line.b = before.rows.at(key);
    if (line.in_after) line.a = after.rows.at(key);
    line.d_cpu = line.a.self_cpu_ns / scale_after - line.b.self_cpu_ns / scale_before;
    line.d_cuda = line.a.self_cuda_ns / scale_after - line.b.self_cuda_ns / scale_before;
    lines.push_back(line);
  }
  // Largest absolute change first; ties by kind, then name, so the output is the same every run.
  std::stable_sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) {
    // Compared at the printed precision (1 ns), so that equal printed changes sort by name.
    const double cx = std::round(std::max(std::fabs(x.d_cpu), std::fabs(x.d_cuda)));
    const double cy = std::round(std::max(std::fabs(y.d_cpu), std::fabs(y.d_cuda)));
    return cx != cy ? cx > cy : x.key < y.key;
  });

  fmt::print("ts_trace_diff\n  before: {}\n  after:  {}\n", describe(paths[0], before), describe(paths[1], after));
  if (per_step) {
    fmt::print("  per step: what lies inside ProfilerStep#N, averaged over each trace's steps; times in us\n");
  } else {
    fmt::print("  whole traces, summed; times in us\n");
  }
  if (cuda) {
    fmt::print("  change = after - before, ratio = after / before; Self CUDA of an op = GPU work it launched itself\n\n");
  } else {
    fmt::print("  change = after - before, ratio = after / before\n"
               "  no Self CUDA columns: neither trace has device activity (no kernel, no copy, no CUDA call)\n\n");
  }

  // One row's cells: calls, Self CPU (and Self CUDA when a trace has device activity), kind and name.
  const std::string calls_format = per_step ? "{:>7.2f}" : "{:>7.0f}";
  const auto print_row = [&](const std::string& calls_b, const std::string& calls_a, const std::string (&cpu)[4],
                             const std::string (&gpu)[4], const std::string& kind, const std::string& name) {
    std::string text = fmt::format("{} {}  {:>11} {:>11} {:>11} {:>6}", calls_b, calls_a, cpu[0], cpu[1], cpu[2], cpu[3]);
    if (cuda) text += fmt::format("  {:>11} {:>11} {:>11} {:>6}", gpu[0], gpu[1], gpu[2], gpu[3]);
    if (!kind.empty() || !name.empty()) text += fmt::format("  {:<16} {}", kind, name);
    fmt::print("{}\n", text);
  };
  print_row(fmt::format("{:>7}", "calls"), fmt::format("{:>7}", "calls"), {"Self CPU", "Self CPU", "change", "ratio"},
            {"Self CUDA", "Self CUDA", "change", "ratio"}, "kind", "name");
  print_row(fmt::format("{:>7}", "before"), fmt::format("{:>7}", "after"), {"before", "after", "", ""},
            {"before", "after", "", ""}, "", "");
  double largest = 0;
  for (const Line& line : lines) {
    const double cpu_b = line.b.self_cpu_ns / scale_before, cpu_a = line.a.self_cpu_ns / scale_after;
    const double cuda_b = line.b.self_cuda_ns / scale_before, cuda_a = line.a.self_cuda_ns / scale_after;
    largest = std::max({largest, std::fabs(line.d_cpu), std::fabs(line.d_cuda)});
    print_row(fmt::format(fmt::runtime(calls_format), line.b.calls / scale_before),
              fmt::format(fmt::runtime(calls_format), line.a.calls / scale_after),
              {us(cpu_b), us(cpu_a), us(line.d_cpu), ratio(cpu_b, cpu_a)},
              {us(cuda_b), us(cuda_a), us(line.d_cuda), ratio(cuda_b, cuda_a)}, line.key.first, line.key.second);
  }
  const double cpu_b = before.self_cpu_total_ns / scale_before, cpu_a = after.self_cpu_total_ns / scale_after;
  const double cuda_b = before.self_cuda_total_ns / scale_before, cuda_a = after.self_cuda_total_ns / scale_after;
  fmt::print("\nSelf CPU time total:  {} -> {} (change {}, ratio {})\n", us(cpu_b), us(cpu_a), us(cpu_a - cpu_b),
             ratio(cpu_b, cpu_a));
  if (cuda)
    fmt::print("Self CUDA time total: {} -> {} (change {}, ratio {})\n", us(cuda_b), us(cuda_a), us(cuda_a - cuda_b),
               ratio(cuda_b, cuda_a));

  int appeared = 0, vanished = 0;
  for (const Line& line : lines) appeared += line.in_after && !line.in_before;
  for (const Line& line : lines) vanished += line.in_before && !line.in_after;
  fmt::print("\nappeared (after only): {}\n", appeared == 0 ? "none" : std::to_string(appeared));
  for (const Line& line : lines)
    if (line.in_after && !line.in_before) fmt::print("  {:<16} {}\n", line.key.first, line.key.second);
  fmt::print("vanished (before only): {}\n", vanished == 0 ? "none" : std::to_string(vanished));
  for (const Line& line : lines)
    if (line.in_before && !line.in_after) fmt::print("  {:<16} {}\n", line.key.first, line.key.second);
  if (largest < 0.5 && appeared == 0 && vanished == 0) {
    bool same_calls = true;
    for (const Line& line : lines) same_calls &= line.b.calls / scale_before == line.a.calls / scale_after;
    if (same_calls)
      fmt::print("no change: every row has the same {}\n", cuda ? "calls, Self CPU and Self CUDA" : "calls and Self CPU");
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ts_trace_diff: out of memory\n");
  } catch (const std::exception& e) {  // ts::trace::Error: a trace it cannot read, in one line
    fmt::print(stderr, "ts_trace_diff: {}\n", e.what());
  }
  return 1;
}
