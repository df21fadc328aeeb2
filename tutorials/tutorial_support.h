// tutorials/tutorial_support.h: what the profiling tutorials share: run a step
// function under the series' schedule, print and save the table, write the
// trace, count the kernels a step launched.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tensor/device.h"
#include "tensor/error.h"

namespace tutorial {

namespace prof = ts::profiler;

// The flags every profiling tutorial takes.
struct CommonFlags {
  std::string dtype = "bf16";
  int warmup = 0;  // iterations before profiling: "warm" in file names when > 0, else "cold"
  int active = 3;  // recorded steps
  std::string device = ts::cuda::is_available() ? "cuda" : "cpu";
  std::string out_dir;

  const char* temperature() const { return warmup > 0 ? "warm" : "cold"; }
};

inline void add_common_flags(CLI::App& app, CommonFlags& f, const std::string& default_out_dir) {
  f.out_dir = default_out_dir;
  app.add_option("--dtype", f.dtype, "bf16, f16 or f32")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  app.add_option("--warmup", f.warmup, "iterations run before profiling (0: a cold start)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--active", f.active, "recorded steps (default 3)")->check(CLI::PositiveNumber);
  app.add_option("--device", f.device, "cpu or cuda (default: cuda when a GPU is present)");
  app.add_option("--out-dir", f.out_dir, "where the .json and .txt go (default " + default_out_dir + ")");
}

// Runs a tutorial's body; a ts::Error (a bad flag, no GPU) prints and exits 1.
template <typename Fn>
int run_guarded(Fn&& body) {
  try {
    return body();
  } catch (const ts::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}

struct ProfiledRun {
  prof::EventList averages;
  bool device_ran = false;   // the table has CUDA time
  int64_t kernels = 0;       // kernel events recorded over the active steps
};

// Runs step() 2 + active times under schedule(wait=1, warmup=1, active) with
// record_shapes; writes <out_dir>/<config>.json (the trace) and .txt (the
// table), prints the table sorted by device time when a GPU ran, else CPU time.
inline ProfiledRun profile_steps(const std::function<void()>& step, int active, ts::Device device,
                                 const std::string& out_dir, const std::string& config, int row_limit = 20) {
  std::filesystem::create_directories(out_dir);
  const std::string json_path = fmt::format("{}/{}.json", out_dir, config);
  const std::string txt_path = fmt::format("{}/{}.txt", out_dir, config);

  prof::ProfilerConfig settings;
  if (device.is_cuda()) settings.activities.push_back(prof::Activity::CUDA);
  settings.schedule = prof::schedule(/*wait=*/1, /*warmup=*/1, /*active=*/active, /*repeat=*/1);
  settings.record_shapes = true;
  settings.on_trace_ready = [&](prof::Profiler& p) { p.export_chrome_trace(json_path); };
  prof::Profiler profiler(settings);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < 2 + active; ++i) {
      step();
      profiler.step();
    }
  }

  ProfiledRun run{profiler.key_averages()};
  for (const prof::KeyAverage& row : run.averages.rows) run.device_ran = run.device_ran || row.self_device_time_total_ns > 0;
  for (const prof::Event& e : profiler.events()) run.kernels += e.kind == prof::EventKind::kernel;
  const std::string table = run.averages.table(run.device_ran ? "cuda_time_total" : "cpu_time_total", row_limit);
  fmt::print("{}\n", table);
  std::ofstream(txt_path) << table;
  fmt::print("wrote {} (open it in https://ui.perfetto.dev or chrome://tracing)\n      {}\n\n", json_path, txt_path);
  return run;
}

}  // namespace tutorial
