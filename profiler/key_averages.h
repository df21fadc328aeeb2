// profiler/key_averages.h: torch's key_averages() and its .table(), the profiler's text summary.
//
// key_averages() folds a recording into one row per name (ProfilerStep#N
// folds into "ProfilerStep*"), optionally per input shapes and per source
// location, exactly as PyTorch's EventList.key_averages does:
//   Self CPU    an event's duration minus its direct children's durations
//   CPU total   its duration (children included)
//   Self CUDA   GPU time of the kernels this op launched itself (innermost op at launch)
//   CUDA total  Self CUDA plus its children's CUDA total
//   CPU Mem     bytes allocated (net) while it ran; Self CPU Mem leaves out its children
// table() prints those rows character for character like PyTorch: same
// columns (CUDA ones only when some row has device time), widths, units,
// percentages (of the sum of Self CPU over all rows) and footer lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/event.h"

namespace ts::profiler {

// One row: the totals of every event with the same key. Times in nanoseconds;
// the *_us() accessors give PyTorch's microsecond values.
struct KeyAverage {
  std::string key;                  // the event name; "ProfilerStep*" for every step
  bool is_device = false;           // GPU activity (kernel, memcpy, memset, GPU annotation)
  bool is_user_annotation = false;  // record_function, ProfilerStep, GPU annotation
  bool has_cpu_parent = false;      // the first event of the row is nested in another
  std::string input_shapes;         // "[[64, 64], [64, 64], []]" when grouped by input shape, else ""
  bool has_input_shapes = false;    // the shapes list is not empty
  std::vector<std::string> stack;   // "file.cpp(12): function", when grouped by stack
  int64_t count = 0;
  int64_t cpu_time_total_ns = 0, self_cpu_time_total_ns = 0;
  int64_t device_time_total_ns = 0, self_device_time_total_ns = 0;
  int64_t cpu_memory_usage = 0, self_cpu_memory_usage = 0;  // bytes
  int64_t device_memory_usage = 0, self_device_memory_usage = 0;
  int64_t flops = 0;

  double cpu_time_total_us() const { return static_cast<double>(cpu_time_total_ns) / 1000.0; }
  double self_cpu_time_total_us() const { return static_cast<double>(self_cpu_time_total_ns) / 1000.0; }
  double device_time_total_us() const { return static_cast<double>(device_time_total_ns) / 1000.0; }
  double self_device_time_total_us() const { return static_cast<double>(self_device_time_total_ns) / 1000.0; }
  double cpu_time_us() const { return count == 0 ? 0.0 : cpu_time_total_us() / static_cast<double>(count); }
  double device_time_us() const { return count == 0 ? 0.0 : device_time_total_us() / static_cast<double>(count); }
};

// table()'s arguments, with PyTorch's names and defaults.
struct TableOptions {
  // Any numeric attribute, largest first: cpu_time_total, self_cpu_time_total,
  // cuda_time_total (= device_time_total), self_cuda_time_total, cpu_time,
  // cuda_time, cpu_memory_usage, self_cpu_memory_usage, cuda_memory_usage,
  // self_cuda_memory_usage, count, flops. Empty: order of first appearance.
  std::string sort_by;
  int row_limit = 100;              // -1: every row
  int max_name_column_width = 55;   // longer names print 52 characters + "..."
  std::string time_unit;            // "" (per value), "s", "ms" or "us"
  int max_src_column_width = 75;
  int max_shapes_column_width = 80;
  std::string header;               // a title line above the table
  bool top_level_events_only = false;
};

class EventList {
 public:
  std::vector<KeyAverage> rows;
  bool use_device = false;  // CUDA activity was asked for: CUDA columns when there is device time
  bool profile_memory = false;
  bool with_flops = false;
  int64_t dropped_events = 0;
  int64_t scopes_ended_early = 0;  // ended with an enclosing record_function that ended first
  size_t max_events_per_thread = 0;
  DeviceActivityInfo device_activity;  // footer lines when the CUDA side is partial or a fallback

  std::string table(const TableOptions& options = {}) const;
  std::string table(std::string_view sort_by, int row_limit = 100, int max_name_column_width = 55,
                    std::string_view time_unit = "") const;

  // The "Self CPU time total" footer: the sum of Self CPU over every row.
  int64_t self_cpu_time_total_ns() const;
  // The first row with this key (nullptr if none): for tests and tools.
  const KeyAverage* find(std::string_view key, bool is_device = false) const;
};

EventList key_averages(const Recording& recording, bool group_by_input_shape = false, int group_by_stack_n = 0);

// The pieces of the table's text, as PyTorch formats them.
std::string format_time(double us);         // 12.345us, 1.234ms, 1.234s
std::string format_memory(int64_t bytes);   // 512 B, 1.50 KB, -33.00 KB, 2.00 MB
std::string format_shapes(const std::vector<InputMeta>& inputs);  // [[64, 64], [64, 64], []]
std::string format_frame(const CallSite& site);                   // file.cpp(12): function

// The table's last line when the library was compiled without optimization (a Debug build, or
// no build type at all): the times it measures are not those of an optimized build. "" otherwise.
std::string_view unoptimized_build_note();

}  // namespace ts::profiler
