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
  // The profiler schedule's unrecorded steps before the active ones: the series' wait=1,
  // warmup=1. With both 0 the very first call is recorded: a true cold start.
  int schedule_wait = 1, schedule_warmup = 1;
  std::string device = ts::cuda::is_available() ? "cuda" : "cpu";
  std::string out_dir;

  const char* temperature() const { return warmup > 0 ? "warm" : "cold"; }
  int first_recorded_step() const { return schedule_wait + schedule_warmup; }
  // The artifacts' name for a configuration: "_wait0_warmup0" is appended when the
  // schedule is not the series' one.
  std::string artifact_name(const std::string& config) const {
    return schedule_wait == 1 && schedule_warmup == 1
               ? config
               : fmt::format("{}_wait{}_warmup{}", config, schedule_wait, schedule_warmup);
  }
};

inline void add_common_flags(CLI::App& app, CommonFlags& f, const std::string& default_out_dir) {
  f.out_dir = default_out_dir;
  app.add_option("--dtype", f.dtype, "bf16, f16 or f32")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  app.add_option("--warmup", f.warmup, "iterations run before profiling (0: a cold start)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--active", f.active, "recorded steps (default 3)")->check(CLI::PositiveNumber);
  app.add_option("--schedule-wait", f.schedule_wait, "unrecorded steps before the profiler's warmup (default 1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--schedule-warmup", f.schedule_warmup,
                 "steps the profiler runs but discards before recording (default 1); 0 and 0 record the first call")
      ->check(CLI::NonNegativeNumber);
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

// Runs step() wait + warmup + active times under schedule(wait, warmup, active)
// with record_shapes; writes <out_dir>/<artifact_name(config)>.json (the trace)
// and .txt (the table), prints the table sorted by device time when a GPU ran,
// else CPU time.
inline ProfiledRun profile_steps(const std::function<void()>& step, const CommonFlags& f, ts::Device device,
                                 const std::string& config, int row_limit = 20) {
  std::filesystem::create_directories(f.out_dir);
  const std::string name = f.artifact_name(config);
  const std::string json_path = fmt::format("{}/{}.json", f.out_dir, name);
  const std::string txt_path = fmt::format("{}/{}.txt", f.out_dir, name);

  prof::ProfilerConfig settings;
  if (device.is_cuda()) settings.activities.push_back(prof::Activity::CUDA);
  settings.schedule = prof::schedule(f.schedule_wait, f.schedule_warmup, f.active, /*repeat=*/1);
  settings.record_shapes = true;
  settings.on_trace_ready = [&](prof::Profiler& p) { p.export_chrome_trace(json_path); };
  prof::Profiler profiler(settings);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < f.first_recorded_step() + f.active; ++i) {
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
