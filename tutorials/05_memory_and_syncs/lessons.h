// tutorials/05_memory_and_syncs/lessons.h: what tutorial 05's three lessons share: the flags, the
// lessons' entry points (each returns false when one of its checks failed), a profile of a step
// function that keeps the recording for the lesson to read, and the lines that report a check.
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_timing.h"
#include "tensor/cuda_allocator.h"
#include "tutorials/tutorial_support.h"

namespace memory_and_syncs {

namespace prof = ts::profiler;
using prof::Event;
using prof::EventKind;

struct Flags : tutorial::CommonFlags {
  std::string lesson = "all";
  // -1: the device's default. The article's batch of 64 on a GPU; 8 on the CPU, where one forward
  // at 64 takes seconds.
  int64_t batch = -1, seq = 128, dim = 768, hidden = 3072;
  int64_t timing_rows = -1;  // the timing lesson's gelu runs on [timing_rows, hidden]: 2048 on a GPU, 256 on the CPU
};

// The lessons, in the order --lesson all runs them (lesson1_memory.cpp, lesson2_syncs.cpp, lesson3_timing.cpp).
bool lesson_memory(const Flags& f, ts::Device device);
bool lesson_syncs(const Flags& f, ts::Device device);
bool lesson_timing(const Flags& f, ts::Device device);

// PyTorch's units, as the table prints them: 512 B, 48.00 MB (MB = 2^20 bytes).
inline std::string mem(int64_t bytes) { return prof::format_memory(bytes); }

inline std::string us_str(double us) { return fmt::format("{:.3f} us", us); }

inline double median(std::vector<double> v) { return v.empty() ? 0.0 : ts::bench::median(std::move(v)); }

// The MLP lessons' configuration in file names: 64x128x768x3072_bf16.
inline std::string shape_tag(const Flags& f) {
  return fmt::format("{}x{}x{}x{}_{}", f.batch, f.seq, f.dim, f.hidden, f.dtype);
}

// "_nocache" under TS_CUDA_NO_CACHING=1, so that its files sit beside the cached run's.
inline std::string allocator_tag(ts::Device device) {
  return device.is_cuda() && !ts::cuda::caching_enabled() ? "_nocache" : "";
}

// ---- profiling -----------------------------------------------------------------------------------

struct Profile {
  prof::EventList averages;
  prof::Recording recording;
  std::string json_path;
};

// Runs step() wait + warmup + active times under the flags' schedule, with CUDA activity on a GPU
// and profile_memory when asked; writes <out_dir>/<artifact_name(config)>.{json,txt}, prints the
// table sorted by `sort_by` and where the two files went.
inline Profile profile(const std::function<void()>& step, const tutorial::CommonFlags& f, ts::Device device,
                       const std::string& config, bool memory, const std::string& sort_by, int row_limit) {
  const std::string name = f.artifact_name(config);
  Profile p;
  p.json_path = fmt::format("{}/{}.json", f.out_dir, name);
  const std::string txt_path = fmt::format("{}/{}.txt", f.out_dir, name);
  const bool replaced = tutorial::file_exists(p.json_path) || tutorial::file_exists(txt_path);
  prof::ProfilerConfig settings;
  if (device.is_cuda()) settings.activities.push_back(prof::Activity::CUDA);
  settings.schedule = tutorial::make_schedule(f);
  settings.record_shapes = true;
  settings.profile_memory = memory;
  settings.on_trace_ready = [&](prof::Profiler& pr) { pr.export_chrome_trace(p.json_path); };
  prof::Profiler profiler(settings);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < f.first_recorded_step() + f.active; ++i) {
      step();
      profiler.step();
    }
    profiler.stop();
  }
  p.averages = profiler.key_averages();
  p.recording = profiler.recording();
  const std::string table = p.averages.table(sort_by, row_limit);
  fmt::print("{}\n", table);
  tutorial::write_text_file(txt_path, table);
  tutorial::print_written(p.json_path, txt_path, replaced);
  return p;
}

// CUPTI recorded this run's CUDA side (not the CUDA-event fallback another tool such as ncu causes).
inline bool cupti_recorded(const Profile& p) { return p.recording.device_activity.source == "cupti"; }

// ---- checks --------------------------------------------------------------------------------------

// bf16/f16: three GEMMs and the elementwise middle each round once.
inline double tolerance_for(ts::DType dtype) { return dtype == ts::DType::f32 ? 1e-4 : 2e-2; }

inline bool report_check(const char* what, double error, double tolerance) {
  const bool ok = error <= tolerance;
  fmt::print("check of {} against a float64 reference: {} (relative error {:.2e}, tolerance {:.0e})\n", what,
             ok ? "OK" : "FAILED", error, tolerance);
  return ok;
}

// A line that says whether a check of our own code held; false when it did not.
inline bool expect(bool ok, const std::string& what) {
  fmt::print("  {} {}\n", ok ? "OK      " : "MISMATCH", what);
  return ok;
}

}  // namespace memory_and_syncs
