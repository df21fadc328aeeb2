// tutorials/00_tensors_and_views.cpp: shape, strides and views, the series' first lesson.
//
// A tensor is a view (shape, strides, offset) over a flat storage. t() swaps
// shape and strides over the SAME storage: nothing moves. contiguous() is the
// op that actually reorders the bytes. This is why, later, the profiler shows
// ts::t with zero device time and a GEMM that reads the transposed operand
// directly. The run is profiled: its table (and the trace written beside it)
// shows which of these calls launched work and which only made a new view.
//
// Writes traces/00_tensors_and_views/views_<cpu|cuda>[_<tag>].{json,txt}.
//
// Run: ./build/dev/tutorials/00_tensors_and_views [--device cpu|cuda] [--out-dir DIR] [--tag NAME]
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <vector>

#include "ops/ops.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tutorials/tutorial_support.h"

namespace {

// Storages by order of first appearance (#1, #2, ...): which tensors share memory, the same in every run.
int storage_number(const ts::Tensor& x) {
  static std::map<const void*, int> numbers;
  return numbers.try_emplace(x.storage().get(), static_cast<int>(numbers.size()) + 1).first->second;
}

// The run's first op against the calls after it: the first pays one-time costs the others do not.
//   ts::t, the run's first op, took 3.797 us of Self CPU; the other calls 1.863 us each (median). ...
void print_first_call(const ts::profiler::EventList& table) {
  if (table.rows.size() < 2) return;
  const auto self_us = [](const ts::profiler::KeyAverage& row) {
    return row.self_cpu_time_total_us() / static_cast<double>(std::max<int64_t>(row.count, 1));
  };
  std::vector<double> rest;
  for (size_t i = 1; i < table.rows.size(); ++i) rest.push_back(self_us(table.rows[i]));
  std::sort(rest.begin(), rest.end());
  const size_t n = rest.size();
  const double median = n % 2 == 1 ? rest[n / 2] : (rest[n / 2 - 1] + rest[n / 2]) / 2;
  const ts::profiler::KeyAverage& first = table.rows.front();
  fmt::print("{}, the run's first op, took {:.3f} us of Self CPU; the other calls {:.3f} us each (median). A first\n"
             "call pays one-time costs (the dispatcher's set-up, code and data the process touches for the first\n"
             "time) that later calls do not: read the first row of any profile with that in mind. Tutorial 01's\n"
             "schedule keeps such costs out of the steps it records.\n\n",
             first.key, self_us(first), median);
}

void describe(const char* name, const ts::Tensor& x) {
  fmt::print("{:<14} shape {}  strides {}  offset {}  contiguous {}  storage #{}\n", name, x.shape(), x.strides(),
             x.offset(), x.is_contiguous() ? "yes" : "no ", storage_number(x));
}

}  // namespace

int main(int argc, char** argv) try {  // every exception becomes one line and exit code 1
  CLI::App app{"Tutorial 00: tensors, strides and views"};
  std::string device_name = ts::cuda::is_available() ? "cuda" : "cpu";
  std::string out_dir, tag;
  tutorial::add_device_flag(app, device_name);
  tutorial::add_output_flags(app, out_dir, tag, "traces/00_tensors_and_views");
  if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;

  const ts::Device device = ts::Device::parse(device_name);
  ts::check_device_available(device, "00_tensors_and_views");
  tutorial::prepare_out_dir(out_dir);
  fmt::print("== Tutorial 00: tensors and views (device {})\n\n", device.str());
  // Everything below is recorded: the table at the end says which calls launched work.
  ts::profiler::ProfilerConfig settings;
  if (device.is_cuda()) settings.activities.push_back(ts::profiler::Activity::CUDA);
  settings.record_shapes = true;
  ts::profiler::Profiler profiler(settings);
  profiler.start();
  fmt::print("Guess first: a 3x2 tensor stored row by row has strides [2, 1]: one step in dim 0\n"
             "skips a row of 2 elements, one step in dim 1 moves to the next element.\n"
             "t() should give shape [2, 3] and strides [1, 2] over the same storage.\n\n");

  const ts::Tensor x = ts::tensor({{1, 2}, {3, 4}, {5, 6}}, {ts::DType::f32, device});
  describe("x", x);
  fmt::print("{}\n\n", x.str());

  const ts::Tensor xt = x.t();
  describe("x.t()", xt);
  fmt::print("{}\n", xt.str());
  const bool shared = xt.storage() == x.storage();
  fmt::print("same storage as x: {}. Nothing was copied: element [i][j] of x.t() is read from\n"
             "offset i*1 + j*2 of x's storage.\n\n",
             shared ? "yes" : "NO");

  const ts::Tensor xc = xt.contiguous();
  describe("x.t().contig", xc);
  fmt::print("contiguous() copied the data into a new storage laid out row by row for shape [2, 3]:\n"
             "strides are [3, 1] now. That copy is real work (ts::copy_) in the profile below.\n\n");

  const ts::Tensor row = x.select(0, 1);
  describe("x[1]", row);
  fmt::print("{}\n", row.str());
  fmt::print("select(0, 1) moved the offset by one row (2 elements) and dropped a dim.\n\n");

  const ts::Tensor col = x.select(1, 0);
  describe("x[:, 0]", col);
  fmt::print("{}\n", col.str());
  fmt::print("a column is a strided view: stride 2, not contiguous.\n\n");

  const ts::Tensor b = ts::tensor({10, 20}, {ts::DType::f32, device}).expand({3, 2});
  describe("expand", b);
  fmt::print("expand() broadcasts with stride 0: three rows, one row of memory.\n\n");

  const ts::Tensor y = ts::add(x, b);
  describe("x + expand", y);
  fmt::print("{}\n", y.str());
  fmt::print("ts::add read b through its stride-0 dim: every row of x met the same [10, 20].\n\n");

  profiler.stop();
  const ts::profiler::EventList table = profiler.key_averages();
  const std::string text = table.table("", /*row_limit=*/-1);
  fmt::print("Every call above as the profiler recorded it, in order of first appearance.\n"
             "Guess first: which calls worked on the data, and which only made a new view of it? {}\n{}\n",
             device.is_cuda()
                 ? "A view launches\nnothing: look for the rows with CUDA time. The first calls also pay for CUDA's "
                   "start (the context,\nloading each kernel): one-time costs, not work."
                 : "At 6 elements no\ncall has work to speak of: the times are bookkeeping, a few microseconds or "
                   "less per call, and the\nrun's first op also pays one-time costs. Look at the nesting instead: a "
                   "view calls nothing below it.",
             text);
  if (device.is_cpu()) print_first_call(table);
  const std::string base = fmt::format("{}/views_{}{}", out_dir, device.is_cuda() ? "cuda" : "cpu",
                                       tag.empty() ? "" : "_" + tag);
  const bool replaced = tutorial::file_exists(base + ".json") || tutorial::file_exists(base + ".txt");
  tutorial::write_text_file(base + ".txt", text);
  profiler.export_chrome_trace(base + ".json");
  tutorial::print_written(base + ".json", base + ".txt", replaced);

  // The check this tutorial stands on: views share storage and read the right elements.
  const std::vector<float> want_t{1, 3, 5, 2, 4, 6};
  const bool ok = shared && xt.to_vector<float>() == want_t && xc.to_vector<float>() == want_t &&
                  xc.storage() != x.storage() && xc.strides() == ts::Dims{3, 1} &&
                  y.to_vector<float>() == std::vector<float>{11, 22, 13, 24, 15, 26};
  fmt::print("check: {}\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
} catch (...) {
  return tutorial::report_current_exception();
}
