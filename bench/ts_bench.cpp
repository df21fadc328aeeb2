// bench/ts_bench.cpp: tensorscope's benchmark: median cost per op over many runs.
//
//   ts_bench                 every entry, as a table
//   ts_bench --filter dispatch --json out.jsonl
//   ts_bench --list          the entries, and every registered variant
//
// Each entry warms up, then times `repeats` batches of `inner` calls with a
// steady clock and reports the median batch divided by `inner`. With --json,
// one object per line: {"name": ..., "value": ..., "unit": ...}.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "ops/registry.h"

namespace {

struct Result {
  std::string name;
  double value;
  std::string unit;
  std::string note;
};

// Median over `repeats` batches of the per-call time (microseconds) of fn.
double median_us_per_call(const std::function<void()>& fn, int inner, int repeats) {
  for (int i = 0; i < inner; ++i) fn();  // warm-up: caches, allocator, first-use statics
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) fn();
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / inner);
  }
  std::nth_element(samples.begin(), samples.begin() + repeats / 2, samples.end());
  return samples[static_cast<size_t>(repeats / 2)];
}

struct Entry {
  const char* name;
  const char* note;
  std::function<Result()> run;
};

std::vector<Entry> entries() {
  std::vector<Entry> list;
  list.push_back({"dispatch/cpu/view_t", "target <= 0.15 us; PyTorch from Python: 1.2 us", [] {
                    const ts::Tensor x = ts::randn({64, 32});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::t(x); }, 10000, 51);
                    return Result{"dispatch/cpu/view_t", us, "us", ""};
                  }});
  list.push_back({"dispatch/cpu/add_1elem", "target <= 0.5 us; PyTorch from Python: ~4 us", [] {
                    const ts::Tensor a = ts::randn({1}), b = ts::randn({1});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::add(a, b); }, 10000, 51);
                    return Result{"dispatch/cpu/add_1elem", us, "us", ""};
                  }});
  list.push_back({"matmul/cpu/f32/1024", "ts::mm 1024^3 f32 through the best CPU rung", [] {
                    const ts::Tensor a = ts::randn({1024, 1024}), b = ts::randn({1024, 1024});
                    ts::Tensor sink;
                    const double us = median_us_per_call([&] { sink = ts::mm(a, b); }, 1, 5);
                    return Result{"matmul/cpu/f32/1024", 2.0 * 1024 * 1024 * 1024 / (us * 1e-6) / 1e9, "GFLOP/s", ""};
                  }});
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ts_bench: median per-op cost of tensorscope's hot paths"};
  std::string filter, json_path;
  bool list = false;
  app.add_option("--filter", filter, "run entries whose name contains this");
  app.add_option("--json", json_path, "also write one JSON object per line to this file");
  app.add_flag("--list", list, "list the entries and every registered variant");
  CLI11_PARSE(app, argc, argv);

  const std::vector<Entry> all = entries();
  if (list) {
    for (const Entry& e : all) fmt::print("{:<28} {}\n", e.name, e.note);
    fmt::print("\nregistered variants:\n");
    for (const ts::Variant& v : ts::all_variants()) fmt::print("  {:<40} rung {}  {}\n", v.name, v.rung, v.summary);
    return 0;
  }

  std::FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
  if (!json_path.empty() && json == nullptr) {
    fmt::print(stderr, "ts_bench: cannot write {}\n", json_path);
    return 1;
  }
  fmt::print("{:<28} {:>12} {:<8}  {}\n", "entry", "median", "unit", "note");
  fmt::print("{:-<28} {:->12} {:-<8}  {:-<40}\n", "", "", "", "");
  for (const Entry& e : all) {
    if (!filter.empty() && std::string(e.name).find(filter) == std::string::npos) continue;
    const Result r = e.run();
    fmt::print("{:<28} {:>12.3f} {:<8}  {}\n", r.name, r.value, r.unit, e.note);
    if (json) fmt::print(json, "{{\"name\": \"{}\", \"value\": {:.6g}, \"unit\": \"{}\"}}\n", r.name, r.value, r.unit);
  }
  if (json) std::fclose(json);
  return 0;
}
