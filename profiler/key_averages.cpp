// profiler/key_averages.cpp: rows from events (EventList.key_averages) and the table text (_build_table).
//
// Both follow torch/autograd/profiler_util.py step by step, so that a learner
// can read our table exactly as they read PyTorch's.
#include "profiler/key_averages.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <unordered_map>

#include "profiler/graph_replays.h"
#include "tensor/error.h"

namespace ts::profiler {

// ---- formatting ---------------------------------------------------------------

std::string format_time(double us) {
  if (us >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}

std::string format_memory(int64_t bytes) {
  constexpr int64_t KB = 1024, MB = 1024 * KB, GB = 1024 * MB;
  const int64_t magnitude = std::llabs(bytes);
  const double b = static_cast<double>(bytes);
  if (magnitude >= GB) return fmt::format("{:.2f} GB", b / GB);
  if (magnitude >= MB) return fmt::format("{:.2f} MB", b / MB);
  if (magnitude >= KB) return fmt::format("{:.2f} KB", b / KB);
  return fmt::format("{} B", bytes);
}

std::string format_shapes(const std::vector<InputMeta>& inputs) {
  std::string s = "[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    s += inputs[i].kind == InputMeta::Kind::tensor ? fmt::format("{}", inputs[i].shape) : "[]";
  }
  return s + "]";
}

std::string format_frame(const CallSite& site) {
  return fmt::format("{}({}): {}", site.file, site.line, site.function);
}

namespace {

// PyTorch's percentage of a total: NaN when the total is 0.
std::string format_share(double value, double total) {
  if (total == 0) return "NaN";
  return fmt::format("{:.2f}%", value * 100.0 / total);
}

std::string format_time_in(double us, std::string_view unit) {
  if (unit == "s") return fmt::format("{:.3f}s", us / 1e6);
  if (unit == "ms") return fmt::format("{:.3f}ms", us / 1e3);
  if (unit == "us") return fmt::format("{:.3f}us", us);
  return format_time(us);
}

// Rows are keyed as in PyTorch: name (steps folded), device or CPU, user
// annotation or not, then the shapes and stack frames when grouping by them.
std::string row_name(std::string_view name) {
  return name.starts_with("ProfilerStep#") ? std::string("ProfilerStep*") : std::string(name);
}

bool is_annotation(EventKind kind) {
  return kind == EventKind::user_annotation || kind == EventKind::profiler_step ||
         kind == EventKind::gpu_user_annotation;
}

}  // namespace

// ---- key_averages ---------------------------------------------------------------

namespace {

// A value per event, indexed by the event's position as an int32_t (the type
// of Event::parent and of start_order()), so that the steps below read as the
// algorithm they follow.
template <typename T>
class PerEvent {
 public:
  PerEvent(int32_t n, const T& value) : values_(static_cast<size_t>(n), value) {}
  decltype(auto) operator[](int32_t i) { return values_[static_cast<size_t>(i)]; }
  decltype(auto) operator[](int32_t i) const { return values_[static_cast<size_t>(i)]; }

 private:
  std::vector<T> values_;
};

// The recording's events, indexed the same way.
struct Events {
  const std::vector<Event>& list;
  const Event& operator[](int32_t i) const { return list[static_cast<size_t>(i)]; }
  int32_t size() const { return static_cast<int32_t>(list.size()); }
};

}  // namespace

EventList key_averages(const Recording& recording, bool group_by_input_shape, int group_by_stack_n) {
  const Events events{recording.events};
  const int32_t n = events.size();
  const bool use_device = recording.use_cuda;

  // Events in (start, -end) order, ties kept: the order rows first appear in.
  const std::vector<int32_t> order = start_order(recording.events);

  // The CPU tree: each CPU range's parent and children (memory instants and GPU work take no part).
  PerEvent<int32_t> parent(n, -1);
  PerEvent<std::vector<int32_t>> children(n, {});
  for (int32_t i : order) {
    const Event& e = events[i];
    if (!is_cpu_range(e.kind) || e.parent < 0) continue;
    parent[i] = e.parent;
    children[e.parent].push_back(i);
  }

  // GPU work charged to the op that launched it (matched by External id).
  std::unordered_map<uint64_t, int32_t> op_by_id;
  for (int32_t i = 0; i < n; ++i)
    if (events[i].kind == EventKind::cpu_op && events[i].id != 0) op_by_id.emplace(events[i].id, i);
  PerEvent<int64_t> kernel_ns(n, 0);
  for (const Event& e : events.list) {
    if (!is_device_activity(e.kind) || e.kind == EventKind::gpu_user_annotation || e.id == 0) continue;
    if (const auto it = op_by_id.find(e.id); it != op_by_id.end()) kernel_ns[it->second] += e.duration_ns();
  }

  // Memory is charged to the innermost scope when it happens; the totals add the children.
  PerEvent<int64_t> cpu_mem(n, 0), device_mem(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    cpu_mem[i] = events[i].self_cpu_memory;
    device_mem[i] = events[i].self_device_memory;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // children before parents
    const int32_t i = *it, p = parent[i];
    if (p < 0) continue;
    cpu_mem[p] += cpu_mem[i];
    device_mem[p] += device_mem[i];
  }

  // PyTorch's _remove_dup_nodes: an only child with its parent's name folds into the parent.
  PerEvent<bool> alive(n, true);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t i : order) {
      const int32_t p = parent[i];
      if (!alive[i] || p < 0 || children[p].size() != 1 || events[p].name != events[i].name) continue;
      children[p] = children[i];
      kernel_ns[p] = kernel_ns[i];
      for (int32_t c : children[p]) parent[c] = p;
      alive[i] = false;
      changed = true;
    }
  }

  // Device totals, inclusive down the tree.
  PerEvent<int64_t> device_total(n, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t i = *it;
    const Event& e = events[i];
    if (!alive[i] || !use_device) continue;
    if (is_device_activity(e.kind)) {
      device_total[i] = e.duration_ns();
    } else if (is_cpu_range(e.kind)) {
      int64_t total = kernel_ns[i];
      for (int32_t c : children[i]) total += device_total[c];
      device_total[i] = total;
    }
  }

  EventList list;
  list.use_device = use_device;
  list.profile_memory = recording.profile_memory;
  list.with_flops = recording.with_flops;
  list.dropped_events = recording.dropped_events;
  list.scopes_ended_early = recording.scopes_ended_early;
  list.device_activity = recording.device_activity;
  list.max_events_per_thread = recording.max_events_per_thread;

  std::unordered_map<std::string, size_t> row_of;
  std::string key;
  for (int32_t i : order) {
    const Event& e = events[i];
    if (!alive[i]) continue;
    // A [memory] event inside a scope is already in that scope's memory columns;
    // one outside every scope becomes a "[memory]" row of its own.
    if (e.kind == EventKind::memory && e.parent >= 0) continue;
    // CUPTI's own work and waits for the device: trace only (a wait is not GPU time).
    if (e.kind == EventKind::overhead || e.kind == EventKind::cuda_sync) continue;

    const bool device = is_device_activity(e.kind);
    const bool annotation = is_annotation(e.kind);
    std::string shapes;
    if (group_by_input_shape) shapes = format_shapes(e.inputs);
    std::vector<std::string> stack;
    if (group_by_stack_n > 0 && e.call_site.known()) stack.push_back(format_frame(e.call_site));

    key = row_name(e.name);
    key += '\x1f';
    key += device ? '1' : '0';
    key += annotation ? '1' : '0';
    if (group_by_input_shape) (key += '\x1f') += shapes;
    for (const std::string& frame : stack) (key += '\x1f') += frame;

    auto [it, inserted] = row_of.try_emplace(key, list.rows.size());
    if (inserted) {
      KeyAverage& row = list.rows.emplace_back();
      row.key = row_name(e.name);
      row.is_device = device;
      row.is_user_annotation = annotation;
      row.has_cpu_parent = parent[i] >= 0;
      row.input_shapes = shapes;
      row.has_input_shapes = group_by_input_shape && !e.inputs.empty();
      row.stack = std::move(stack);
    }
    KeyAverage& row = list.rows[it->second];
    row.count += 1;
    row.flops += e.flops;
    if (e.kind == EventKind::memory) {  // a zero-length CPU event carrying its bytes
      (e.memory_device.is_cpu() ? row.cpu_memory_usage : row.device_memory_usage) += e.bytes;
      (e.memory_device.is_cpu() ? row.self_cpu_memory_usage : row.self_device_memory_usage) += e.bytes;
      continue;
    }
    if (device) {
      row.device_time_total_ns += device_total[i];
      row.self_device_time_total_ns += device_total[i];
      continue;
    }
    int64_t children_cpu = 0, children_device = 0, children_cpu_mem = 0, children_device_mem = 0;
    for (int32_t c : children[i]) {
      children_cpu += events[c].duration_ns();
      children_device += device_total[c];
      children_cpu_mem += cpu_mem[c];
      children_device_mem += device_mem[c];
    }
    row.cpu_time_total_ns += e.duration_ns();
    row.self_cpu_time_total_ns += e.duration_ns() - children_cpu;
    row.device_time_total_ns += device_total[i];
    row.self_device_time_total_ns += device_total[i] - children_device;
    row.cpu_memory_usage += cpu_mem[i];
    row.self_cpu_memory_usage += cpu_mem[i] - children_cpu_mem;
    row.device_memory_usage += device_mem[i];
    row.self_device_memory_usage += device_mem[i] - children_device_mem;
  }
  return list;
}

// ---- table ----------------------------------------------------------------------------

int64_t EventList::self_cpu_time_total_ns() const {
  int64_t total = 0;
  for (const KeyAverage& row : rows) total += row.self_cpu_time_total_ns;
  return total;
}

const KeyAverage* EventList::find(std::string_view key, bool is_device) const {
  for (const KeyAverage& row : rows)
    if (row.key == key && row.is_device == is_device) return &row;
  return nullptr;
}

namespace {

// The attribute sort_by names, as a number to sort on (cuda/xpu read as device, like PyTorch).
double sort_value(const KeyAverage& r, const std::string& attribute) {
  if (attribute == "cpu_time") return r.cpu_time_us();
  if (attribute == "device_time") return r.device_time_us();
  if (attribute == "cpu_time_total") return r.cpu_time_total_us();
  if (attribute == "self_cpu_time_total") return r.self_cpu_time_total_us();
  if (attribute == "device_time_total") return r.device_time_total_us();
  if (attribute == "self_device_time_total") return r.self_device_time_total_us();
  if (attribute == "cpu_memory_usage") return static_cast<double>(r.cpu_memory_usage);
  if (attribute == "self_cpu_memory_usage") return static_cast<double>(r.self_cpu_memory_usage);
  if (attribute == "device_memory_usage") return static_cast<double>(r.device_memory_usage);
  if (attribute == "self_device_memory_usage") return static_cast<double>(r.self_device_memory_usage);
  if (attribute == "count") return static_cast<double>(r.count);
  if (attribute == "flops") return static_cast<double>(r.flops);
  fail("table: unknown sort_by '{}'; use one of cpu_time, cuda_time, cpu_time_total, cuda_time_total, "
       "self_cpu_time_total, self_cuda_time_total, cpu_memory_usage, self_cpu_memory_usage, cuda_memory_usage, "
       "self_cuda_memory_usage, count, flops",
       attribute);
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Widths are in characters, like the strings they hold; a width option of 0 or less means no limit.
size_t capped(size_t width, int max_width) {
  return max_width > 0 ? std::min(width, static_cast<size_t>(max_width)) : width;
}

struct Column {
  size_t width;
  bool left;  // only "Source Location" is left-aligned
};

// One line of cells: each padded to its column (never cut) and followed by two spaces.
void append_row(std::string& out, const std::vector<Column>& columns, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string& cell = i < cells.size() ? cells[i] : std::string();
    const size_t pad = columns[i].width > cell.size() ? columns[i].width - cell.size() : 0;
    if (!columns[i].left) out.append(pad, ' ');
    out += cell;
    if (columns[i].left) out.append(pad, ' ');
    out += "  ";
  }
  out += '\n';
}

// PyTorch's cut of a long name: its first max_width - 3 characters, then "...".
std::string shorten_name(const std::string& name, int max_width) {
  if (max_width <= 0) return name;
  const auto limit = static_cast<size_t>(max_width);
  if (name.size() + 3 < limit) return name;
  return name.substr(0, limit >= 3 ? limit - 3 : std::string::npos) + "...";
}

// Keeps the last `width` characters of a long path, marked with "...".
std::string trim_path(std::string path, size_t width) {
  if (path.size() > width) {
    path = path.substr(path.size() - width);
    if (path.size() > 3) path = "..." + path.substr(3);
  }
  return path;
}

}  // namespace

std::string EventList::table(std::string_view sort_by, int row_limit, int max_name_column_width,
                             std::string_view time_unit) const {
  TableOptions options;
  options.sort_by = sort_by;
  options.row_limit = row_limit;
  options.max_name_column_width = max_name_column_width;
  options.time_unit = time_unit;
  return table(options);
}

std::string EventList::table(const TableOptions& o) const {
  if (rows.empty()) return "";
  TS_CHECK(o.time_unit.empty() || o.time_unit == "s" || o.time_unit == "ms" || o.time_unit == "us",
           "table: time_unit must be \"s\", \"ms\" or \"us\", got \"{}\"", o.time_unit);

  bool has_device_time = false, has_device_mem = false, has_input_shapes = false, has_stack = false;
  for (const KeyAverage& r : rows) {
    has_device_time = has_device_time || r.self_device_time_total_ns > 0;
    has_device_mem = has_device_mem || r.self_device_memory_usage > 0;
    has_input_shapes = has_input_shapes || r.has_input_shapes;
    has_stack = has_stack || !r.stack.empty();
  }
  TS_CHECK(use_device || !has_device_time, "table: rows have device time but CUDA activity was not recorded");

  std::vector<const KeyAverage*> list;
  for (const KeyAverage& r : rows) list.push_back(&r);
  if (!o.sort_by.empty()) {
    const std::string attribute = replace_all(replace_all(o.sort_by, "cuda", "device"), "xpu", "device");
    std::vector<std::pair<double, const KeyAverage*>> keyed;
    for (const KeyAverage* r : list) keyed.emplace_back(sort_value(*r, attribute), r);
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) list[i] = keyed[i].second;
  }

  // Column widths: the longest value + 4, capped.
  size_t name_width = 0, shapes_width = 0, src_width = 0;
  for (const KeyAverage* r : list) {
    name_width = std::max(name_width, r->key.size() + 4);
    shapes_width = std::max(shapes_width, r->input_shapes.size() + 4);
    for (const std::string& frame : r->stack) src_width = std::max(src_width, frame.size() + 4);
  }
  name_width = capped(name_width, o.max_name_column_width);
  shapes_width = capped(shapes_width, o.max_shapes_column_width);
  src_width = capped(src_width, o.max_src_column_width);
  constexpr size_t kWidth = 12;

  std::vector<std::string> headers{"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (has_device_time) headers.insert(headers.end(), {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"});
  if (profile_memory) {
    headers.insert(headers.end(), {"CPU Mem", "Self CPU Mem"});
    if (use_device && has_device_mem) headers.insert(headers.end(), {"CUDA Mem", "Self CUDA Mem"});
  }
  headers.push_back("# of Calls");
  std::vector<Column> columns{{.width = name_width, .left = false}};
  for (size_t i = 1; i < headers.size(); ++i) columns.push_back({.width = kWidth, .left = false});
  if (has_input_shapes) {
    headers.push_back("Input Shapes");
    columns.push_back({.width = shapes_width, .left = false});
  }
  if (has_stack) {
    headers.push_back("Source Location");
    columns.push_back({.width = src_width, .left = true});
  }
  bool show_flops = with_flops;
  double flops_scale = 1;
  if (show_flops) {
    // One unit for the column, from the smallest positive count.
    int64_t smallest = 0;
    for (const KeyAverage* r : list)
      if (r->flops > 0 && (smallest == 0 || r->flops < smallest)) smallest = r->flops;
    if (smallest > 0) {
      static const char* const kUnits[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"};
      const double log_flops = std::max(0.0, std::min(std::log10(static_cast<double>(smallest)) / 3, 5.0));
      flops_scale = std::pow(10.0, std::floor(log_flops) * -3.0);
      headers.push_back(fmt::format("Total {}", kUnits[static_cast<int>(log_flops)]));
      columns.push_back({.width = kWidth, .left = false});
    } else {
      show_flops = false;
    }
  }
  size_t line_length = 0;
  std::string separator;
  for (const Column& c : columns) {
    line_length += c.width + 2;
    separator.append(c.width, '-');
    separator += "  ";
  }
  line_length -= 2;  // the last column's two spaces are not part of the line
  separator += '\n';

  // Percentages are of the sum over all rows (printed or not): Self CPU of
  // every row; Self CUDA of GPU activity rows that are not annotations.
  double total_self_cpu_us = 0, total_self_device_us = 0;
  for (const KeyAverage* r : list) {
    total_self_cpu_us += r->self_cpu_time_total_us();
    if (r->is_device && !r->is_user_annotation) total_self_device_us += r->self_device_time_total_us();
  }

  std::string out;
  if (!o.header.empty()) {
    out.append(line_length, '=');
    out += '\n' + o.header + '\n';
  }
  if (o.top_level_events_only) {
    out.append(line_length, '=');
    out += "\nThis report only display top-level ops statistics\n";
  }
  out += separator;
  append_row(out, columns, headers);
  out += separator;

  const std::string_view unit = o.time_unit;
  int printed = 0;
  std::vector<std::string> cells;
  for (const KeyAverage* r : list) {
    if (printed == o.row_limit) break;
    if (o.top_level_events_only && r->has_cpu_parent) continue;
    ++printed;
    cells = {shorten_name(r->key, o.max_name_column_width),
             format_share(r->self_cpu_time_total_us(), total_self_cpu_us),
             format_time_in(r->self_cpu_time_total_us(), unit),
             format_share(r->cpu_time_total_us(), total_self_cpu_us),
             format_time_in(r->cpu_time_total_us(), unit),
             format_time_in(r->cpu_time_us(), unit)};
    if (has_device_time) {
      cells.push_back(format_time_in(r->self_device_time_total_us(), unit));
      cells.push_back(format_share(r->self_device_time_total_us(), total_self_device_us));
      cells.push_back(format_time_in(r->device_time_total_us(), unit));
      cells.push_back(format_time_in(r->device_time_us(), unit));
    }
    if (profile_memory) {
      cells.push_back(format_memory(r->cpu_memory_usage));
      cells.push_back(format_memory(r->self_cpu_memory_usage));
      if (use_device && has_device_mem) {
        cells.push_back(format_memory(r->device_memory_usage));
        cells.push_back(format_memory(r->self_device_memory_usage));
      }
    }
    cells.push_back(fmt::format("{}", r->count));
    if (has_input_shapes) cells.push_back(r->input_shapes.substr(0, shapes_width));
    // PyTorch appends FLOPs before the source location while its header puts
    // "Source Location" first: with both, the two cells trade columns. Kept as is.
    if (show_flops) cells.push_back(r->flops <= 0 ? std::string("--") : fmt::format("{:8.3f}", static_cast<double>(r->flops) * flops_scale));
    if (has_stack) cells.push_back(r->stack.empty() ? std::string() : trim_path(r->stack[0], src_width));
    append_row(out, columns, cells);
    if (has_stack) {
      std::vector<std::string> empty(headers.size() - 1);
      for (size_t f = 1; f < r->stack.size(); ++f) {
        empty.push_back(trim_path(r->stack[f], src_width));
        append_row(out, columns, empty);
        empty.pop_back();
      }
      empty.emplace_back();
      append_row(out, columns, empty);
    }
  }
  out += separator;
  out += fmt::format("Self CPU time total: {}\n", format_time_in(total_self_cpu_us, unit));
  if (has_device_time) out += fmt::format("Self CUDA time total: {}\n", format_time_in(total_self_device_us, unit));
  if (dropped_events > 0)
    out += fmt::format("Dropped events: {} (a thread's buffer reached max_events_per_thread = {}; those scopes are "
                       "missing above)\n",
                       dropped_events, max_events_per_thread);
  if (scopes_ended_early > 0)
    out += fmt::format("Scopes ended early: {} (a record_function ended before scopes opened inside it, which "
                       "ended with it; end scopes innermost first)\n",
                       scopes_ended_early);
  // Lines PyTorch does not print: only when the CUDA side is not the whole story.
  const DeviceActivityInfo& d = device_activity;
  if (use_device && d.source == "cuda_events")
    out += fmt::format("CUDA time: per-op CUDA-event timing, not CUPTI ({}); ops with child ops get none of "
                       "their own\n",
                       d.error);
  if (use_device && d.source.empty() && !d.error.empty()) out += fmt::format("CUDA activity: not recorded ({})\n", d.error);
  if (d.cupti_dropped_records > 0 || d.buffers_refused > 0)
    out += fmt::format("Dropped CUDA records: {} by CUPTI, {} buffer requests refused (the pool of CUPTI buffers, 128 MiB, was full)\n",
                       d.cupti_dropped_records, d.buffers_refused);
  if (d.launch_order_violations > 0)
    out += fmt::format("Clock: CUPTI's clock put {} GPU activities before their launch call began; every GPU time "
                       "was moved {:.3f} us later to keep each after its launch\n",
                       d.launch_order_violations, static_cast<double>(d.gpu_clock_shift_ns) / 1e3);
  if (d.stream_overlaps_trimmed > 0)
    out += fmt::format("Clock: CUPTI timed {} GPU records as starting before the one before them on their stream ended; "
                       "each earlier one ends where the next began, a sync that began inside one starts where it "
                       "ended (at most {:.3f} us taken off one)\n",
                       d.stream_overlaps_trimmed, static_cast<double>(d.stream_overlap_max_ns) / 1e3);
  if (d.graph_replays_unmatched > 0)
    out += fmt::format("CUDA graph replays not charged to their ops: {} (their GPU work did not match the captured "
                       "graph's nodes; it is under {}; the first: {})\n",
                       d.graph_replays_unmatched, kGraphReplayName, d.first_unmatched_replay);
  if (d.failed_calls > 0)
    out += fmt::format("Failed CUDA calls in the profiler: {} (the first: {})\n", d.failed_calls, d.first_failed_call);
  out += unoptimized_build_note();
  return out;
}

// The library's own optimization as its compiler saw it (__OPTIMIZE__: -O1 and up), and the build
// type CMake gave (TS_BUILD_TYPE, set on this file in CMakeLists.txt).
std::string_view unoptimized_build_note() {
#if defined(__OPTIMIZE__)
  return {};
#else
#ifndef TS_BUILD_TYPE
#define TS_BUILD_TYPE ""
#endif
  static const std::string note = fmt::format(
      "Build: this tensorscope library was compiled without optimization (build type {}): its ops cost many times "
      "the CPU time of an optimized build's. To measure, build with -DCMAKE_BUILD_TYPE=RelWithDebInfo (the dev "
      "preset) or Release.\n",
      std::string_view(TS_BUILD_TYPE).empty() ? std::string_view("none given") : std::string_view(TS_BUILD_TYPE));
  return note;
#endif
}

}  // namespace ts::profiler
