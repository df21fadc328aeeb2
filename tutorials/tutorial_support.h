// tutorials/tutorial_support.h: what the profiling tutorials share: flags with
// ranges and choices that read well in --help and in errors, output that arrives
// line by line in the order it was printed (the guess before the profile, whatever
// stdout is), a main that turns every failure into one line and a non-zero exit,
// run a step function under the series' schedule, print and save the table, write
// the trace (--tag keeps runs apart), print each recorded step's width, and judge
// the kernels a run launched against the tutorial's expectation
// (check_kernel_count: strict on our kernels, explained when a library chose a
// different plan, not checked when CUPTI could not record).
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tensor/device.h"
#include "tensor/error.h"
#include "tensor/file_output.h"

namespace tutorial {

namespace prof = ts::profiler;

// The flags every profiling tutorial takes.
struct CommonFlags {
  std::string dtype = "bf16";  // or f16 on a GPU without bf16 tensor cores (choose_dtype)
  bool dtype_given = false;    // --dtype was on the command line
  int warmup = 0;  // iterations before profiling: "warm" in file names when > 0, else "cold"
  int active = 3;  // recorded steps
  // The profiler schedule's unrecorded steps before the active ones: the series' wait=1,
  // warmup=1. With both 0 the very first call is recorded: a true cold start.
  int schedule_wait = 1, schedule_warmup = 1;
  std::string device = ts::cuda::is_available() ? "cuda" : "cpu";
  std::string out_dir;
  std::string tag;  // --tag: "_<tag>" ends the artifacts' names (before, after), "" for none
  // What the profiler records, as torch.profiler's `activities`: "cpu,cuda" (the default) or
  // "cpu" (no CUPTI: the ops' CPU time without the cost of recording their GPU side).
  std::string activities = "cpu,cuda";

  const char* temperature() const { return warmup > 0 ? "warm" : "cold"; }
  int first_recorded_step() const { return schedule_wait + schedule_warmup; }
  bool cuda_activity() const { return activities == "cpu,cuda"; }
  // The artifacts' name for a configuration: "_wait0_warmup0" is appended when the
  // schedule is not the series' one, "_cpu_activity" when only the CPU is recorded,
  // and last "_<tag>" for --tag (64_f32_cold_eager_before).
  std::string artifact_name(const std::string& config) const {
    std::string name = schedule_wait == 1 && schedule_warmup == 1
                           ? config
                           : fmt::format("{}_wait{}_warmup{}", config, schedule_wait, schedule_warmup);
    if (!cuda_activity()) name += "_cpu_activity";
    return tag.empty() ? name : name + "_" + tag;
  }
};

// An integer flag's range, checked on the text before it is converted, so that
// any value (0, -3, 99999999999999999999, 1e3, abc) gets one readable line:
//   --size: 0 is out of range: expected an integer in [1, 65536]
inline CLI::Validator in_range(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::result_out_of_range)
          return fmt::format("{} is out of range: expected an integer in [{}, {}]", text, lo, hi);
        if (ec != std::errc{} || stop != end)
          return fmt::format("'{}' is not an integer: expected an integer in [{}, {}]", text, lo, hi);
        if (value < lo || value > hi)
          return fmt::format("{} is out of range: expected an integer in [{}, {}]", text, lo, hi);
        return "";
      },
      fmt::format("INT in [{}, {}]", lo, hi), "in_range");
}

// 'bf16', 'f16' or 'f32': the choices as an error message lists them.
inline std::string quoted_choices(const std::vector<std::string>& choices) {
  std::string s;
  for (size_t i = 0; i < choices.size(); ++i)
    s += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ", choices[i]);
  return s;
}

// A flag that takes one of a few words. --help shows them once, the way the tutorials'
// "Run:" lines write them (bf16|f16|f32, cpu,cuda|cpu), and any other value gets one line:
//   --dtype: 'f64' is not a choice: expected 'bf16', 'f16' or 'f32'
inline CLI::Validator one_of(std::vector<std::string> choices) {
  std::string shown;
  for (const std::string& c : choices) shown += (shown.empty() ? "" : "|") + c;
  return CLI::Validator(
      [choices](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return "";
        return fmt::format("'{}' is not a choice: expected {}", text, quoted_choices(choices));
      },
      shown, "one_of");
}

// --tag: the name a run's files end with, so it may hold letters, digits, '-' and '_' only
// (no '/', no space, nothing a shell or a file system reads differently).
inline CLI::Validator file_name_part() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "the tag is empty: expected letters, digits, '-' or '_', e.g. --tag before";
        for (char c : text) {
          const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                          c == '_';
          if (!ok)
            return fmt::format("'{}' has the character '{}': expected letters, digits, '-' and '_' only "
                               "(the tag ends the files' names), e.g. --tag before",
                               text, c);
        }
        return "";
      },
      "NAME", "file_name_part");
}

// Ranges of the shared flags: generous, and small enough that the tutorials'
// own arithmetic (FLOP counts, step counts) never overflows.
constexpr int64_t kMaxIterations = 100'000;  // --warmup
constexpr int64_t kMaxSteps = 10'000;        // --active, --schedule-wait, --schedule-warmup

inline void add_device_flag(CLI::App& app, std::string& device) {
  app.add_option("--device", device, "cpu, cuda or cuda:N (default: cuda when a GPU is present)")
      ->option_text("DEVICE");
}

// --out-dir and --tag: where a run's files go and what their names end with.
inline void add_output_flags(CLI::App& app, std::string& out_dir, std::string& tag, const std::string& default_out_dir) {
  out_dir = default_out_dir;
  app.add_option("--out-dir", out_dir, "where the .json and .txt go (default " + default_out_dir + ")")
      ->option_text("DIR");
  app.add_option("--tag", tag,
                 "end the files' names with _NAME, so that a run keeps the files of another (--tag before, "
                 "--tag after; letters, digits, '-', '_')")
      ->check(file_name_part());
}

inline void add_common_flags(CLI::App& app, CommonFlags& f, const std::string& default_out_dir) {
  app.add_option("--dtype", f.dtype, "element type (default bf16; f16 on a GPU older than compute capability 8.0)")
      ->check(one_of({"bf16", "f16", "f32"}))
      ->each([&f](const std::string&) { f.dtype_given = true; });
  app.add_option("--warmup", f.warmup, "iterations run before profiling (0: a cold start)")
      ->check(in_range(0, kMaxIterations));
  app.add_option("--active", f.active, "recorded steps (default 3)")->check(in_range(1, kMaxSteps));
  app.add_option("--schedule-wait", f.schedule_wait, "unrecorded steps before the profiler's warmup (default 1)")
      ->check(in_range(0, kMaxSteps));
  app.add_option("--schedule-warmup", f.schedule_warmup,
                 "steps the profiler runs but discards before recording (default 1); 0 and 0 record the first call")
      ->check(in_range(0, kMaxSteps));
  add_device_flag(app, f.device);
  app.add_option("--activities", f.activities,
                 "what the profiler records: the CPU and the GPU (the default), or the CPU alone (no CUPTI: "
                 "compare the ops' CPU time)")
      ->check(one_of({"cpu,cuda", "cpu"}));
  add_output_flags(app, f.out_dir, f.tag, default_out_dir);
}

// bf16 unless --dtype says otherwise. A GPU older than compute capability 8.0 (a T4, Turing) has
// tensor cores for f16 and none for bf16, so there the default becomes f16, said in one line:
// the lessons then show tensor-core kernels, as they do in bf16 on newer GPUs.
inline void choose_dtype(CommonFlags& f, ts::Device device) {
  if (f.dtype_given || !device.is_cuda()) return;
  const ts::cuda::DeviceTarget& t = ts::cuda::target(device.index);
  if (t.chosen_as >= ts::cuda::ComputeCapability{8, 0}) return;
  f.dtype = "f16";
  fmt::print("dtype: f16, not bf16: {} ({}, compute capability {}{}) has tensor cores for f16 and none for bf16.\n"
             "       --dtype bf16 asks for bf16 anyway.\n\n",
             device.str(), t.name, ts::cuda::to_string(t.chosen_as),
             t.emulated() ? fmt::format(" as TS_DEVICE_CAPABILITY chooses; the GPU itself is {}",
                                        ts::cuda::to_string(t.gpu))
                          : std::string());
}

// stdout line by line, whatever it is. A terminal gets that by default; a pipe or a file
// (`make tutorials | tee log`, `| less`) would get stdout in blocks of kilobytes, so the
// "Guess first" text would arrive with the table it is meant to come before, and the
// profiler's warnings on stderr (unbuffered) would land above lines printed before them.
// Called first thing, before anything is printed.
inline void print_line_by_line() { std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ); }

// --help lists an option's values once and plainly: "--size INT in [1, 16384]", "--dtype
// bf16|f16|f32" (CLI11 would print the value's type and then the check's text, "INT:INT in
// [1, 16384]"). An option with a check shows the check's text alone.
inline void tidy_help(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (!opt->get_option_text().empty() || opt->get_type_size() == 0) continue;
    const std::string type = opt->get_type_name();
    const size_t colon = type.find(':');
    if (colon != std::string::npos) opt->option_text(type.substr(colon + 1));
  }
}

// Parses the command line. Returns the exit code when the program should stop
// here: 0 after --help, 2 after a bad flag (reported in one line on stderr).
// Every tutorial calls it first: it also sets stdout to print line by line.
inline std::optional<int> parse_flags(CLI::App& app, int argc, char** argv) {
  print_line_by_line();
  tidy_help(app);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("error: {} (--help lists the flags)\n", e.what());
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

// Inside a catch block: prints the exception being handled as one line,
// "error: ...", and returns 1, the tutorials' exit code for a failure.
inline int report_current_exception() noexcept {
  std::fflush(stdout);  // what was printed before the failure comes first
  try {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: unknown exception\n");
  }
  return 1;
}

// Runs a tutorial's main: any exception (a ts::Error for a bad flag value or no
// GPU, a std::exception from the standard library, anything else) prints one
// line and exits 1. Nothing escapes main to abort the process.
template <typename Fn>
int run_guarded(Fn&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return report_current_exception();
  }
}

// Makes the output folder (and its parents) and checks that a file can be
// written in it, before any work: ts::Error naming the path and the reason
// otherwise (an empty path, a file in the way, no permission, /proc).
inline void prepare_out_dir(const std::string& dir) {
  TS_CHECK(!dir.empty(), "--out-dir: the path is empty (give a folder, e.g. --out-dir .)");
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  TS_CHECK(!ec, "--out-dir {}: cannot create the folder: {}", dir, ec.message());
  TS_CHECK(fs::is_directory(dir, ec), "--out-dir {}: not a folder", dir);
  // The probe is a new file of a name mkstemp picks, removed again: nothing already there (a
  // link planted at a name that can be guessed) is opened.
  std::string probe = (fs::path(dir) / ".write_probe_XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  const int error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  TS_CHECK(fd >= 0, "--out-dir {}: cannot write files there: {}", dir, std::strerror(error));
}

// Writes `text` to `path`, whole or not at all (tensor/file_output.h); ts::Error "cannot write
// PATH: why" when any byte of it could not be written or something other than a file is in the way.
inline void write_text_file(const std::string& path, const std::string& text) { ts::write_file(path, text, ""); }

// Whether a file of this name is already there (an earlier run's, to be replaced).
inline bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// Where a run's trace and table went. When a file of the same name was there before the run
// (the same tutorial with the same flags, run again), it says so and how to keep both.
inline void print_written(const std::string& json_path, const std::string& txt_path, bool replaced) {
  fmt::print("wrote the trace {} (open it in https://ui.perfetto.dev or chrome://tracing)\n"
             "      the table {}\n",
             json_path, txt_path);
  if (replaced)
    fmt::print("      (files of an earlier run had these names and were replaced; --tag NAME ends the names\n"
               "      with _NAME, so that a run before a change and one after it are both kept)\n");
  fmt::print("\n");
}

// The profiler's schedule for the flags. With a schedule warmup of 0 the profiler prints
// PyTorch's warning on stderr; the note just before it says what it means for this run.
inline prof::Schedule make_schedule(const CommonFlags& f) {
  if (f.schedule_warmup == 0)
    fmt::print("note: with a schedule warmup of 0 the profiler warns, as PyTorch's does, \"Profiler won't be using\n"
               "      warmup, this can skew profiler results\": the first recorded step also pays the profiler's\n"
               "      own start-up{}. In a cold-start run that is the point;\n"
               "      to measure steady steps, keep the default --schedule-warmup 1.\n",
               f.schedule_wait == 0 && f.warmup == 0 ? " and every first-use cost of the process" : "");
  return prof::schedule(f.schedule_wait, f.schedule_warmup, f.active, /*repeat=*/1);
}

struct ProfiledRun {
  prof::EventList averages;
  bool device_ran = false;   // the table has CUDA time
  int64_t kernels = 0;       // kernel events recorded over the active steps
  prof::Recording recording;  // every event, for a tutorial that counts launches per op
};

// Runs step() wait + warmup + active times under schedule(wait, warmup, active)
// with record_shapes; writes <out_dir>/<artifact_name(config)>.json (the trace)
// and .txt (the table), prints the table sorted by device time when a GPU ran,
// else CPU time, then where the two files went.
inline ProfiledRun profile_steps(const std::function<void()>& step, const CommonFlags& f, ts::Device device,
                                 const std::string& config, int row_limit = 20) {
  prepare_out_dir(f.out_dir);
  const std::string name = f.artifact_name(config);
  const std::string json_path = fmt::format("{}/{}.json", f.out_dir, name);
  const std::string txt_path = fmt::format("{}/{}.txt", f.out_dir, name);
  const bool replaced = file_exists(json_path) || file_exists(txt_path);

  prof::ProfilerConfig settings;
  if (device.is_cuda() && f.cuda_activity()) settings.activities.push_back(prof::Activity::CUDA);
  settings.schedule = make_schedule(f);
  settings.record_shapes = true;
  settings.on_trace_ready = [&](prof::Profiler& p) { p.export_chrome_trace(json_path); };
  prof::Profiler profiler(settings);
  {
    prof::ProfilerGuard guard(profiler);
    for (int i = 0; i < f.first_recorded_step() + f.active; ++i) {
      step();
      profiler.step();  // the last active step writes the trace: a failure to write it throws here
    }
    profiler.stop();  // errors surface here, not in the guard (which can only print them)
  }

  ProfiledRun run;
  run.averages = profiler.key_averages();
  run.recording = profiler.recording();
  for (const prof::KeyAverage& row : run.averages.rows) run.device_ran = run.device_ran || row.self_device_time_total_ns > 0;
  for (const prof::Event& e : profiler.events()) run.kernels += e.kind == prof::EventKind::kernel;
  const std::string table = run.averages.table(run.device_ran ? "cuda_time_total" : "cpu_time_total", row_limit);
  fmt::print("{}\n", table);
  write_text_file(txt_path, table);
  print_written(json_path, txt_path, replaced);
  return run;
}

// The CPU width of every recorded ProfilerStep#N, in step order, and what the
// first is against the others: the cold-start lesson, measured in each run.
//   ProfilerStep widths (CPU, us): #2 34.990  #3 20.947  #4 18.187; the first is 1.79x the median of the others
inline void print_step_widths(const prof::Recording& recording) {
  std::vector<std::pair<std::string, double>> steps;
  for (const prof::Event& e : recording.events)
    if (e.kind == prof::EventKind::profiler_step)
      steps.emplace_back(std::string(e.name.substr(e.name.find('#'))), static_cast<double>(e.duration_ns()) / 1e3);
  if (steps.empty()) return;
  std::string line = "ProfilerStep widths (CPU, us):";
  for (const auto& [name, us] : steps) line += fmt::format(" {} {:.3f}", name, us);
  if (steps.size() >= 2) {
    std::vector<double> rest;
    for (size_t i = 1; i < steps.size(); ++i) rest.push_back(steps[i].second);
    std::sort(rest.begin(), rest.end());
    const size_t n = rest.size();
    const double median = n % 2 == 1 ? rest[n / 2] : (rest[n / 2 - 1] + rest[n / 2]) / 2;
    line += fmt::format("; the first is {:.2f}x the median of the others ({:.3f})", steps[0].second / median, median);
  }
  fmt::print("{}\n", line);
}

// ---- the kernel count ------------------------------------------------------------------------
//
// A tutorial expects a number of kernels per step, counting each library GEMM
// (an op whose variant is a cuBLAS call, such as mm/cuda/cublas) as one kernel.
// The recording decides:
//   ok              exactly that;
//   library_choice  our own kernels exactly as expected, but cuBLASLt launched
//                   more than one kernel for some GEMM calls: for this shape it
//                   chose another algorithm (split-K adds a reduce kernel). Not an
//                   error: the tutorial explains it and exits 0;
//   mismatch        anything else: one of our kernels too many or too few. Exit 1;
//   not_checked     the CUDA side came from the CUDA-event fallback (CUPTI was
//                   held by another tool, such as ncu or cuda-gdb): it times ops,
//                   not kernels, so nothing can be counted. Exit 0, saying so;
//   not_recorded    no CUDA activity was recorded (a CPU run, or --activities cpu).
// A CUDA graph's copy and set nodes may run as kernels (CUPTI names them "memcpy128",
// "memset32"): those are the step's copies, counted apart and named in the report.
struct KernelCount {
  enum class Verdict { ok, library_choice, mismatch, not_checked, not_recorded };
  Verdict verdict = Verdict::not_recorded;
  int64_t expected = 0;         // kernels over the recorded steps, one per library GEMM call
  int64_t own = 0;              // kernels launched by ops that are not library calls
  int64_t library = 0;          // kernels launched by library GEMM calls
  int64_t library_calls = 0;    // library GEMM calls recorded
  std::map<std::string, int64_t> library_kernels;  // name -> count, for the explanation
  std::map<std::string, int64_t> copy_kernels;     // a graph's copies run as kernels: name -> count
  std::string report;           // what the tutorial prints, one or more lines

  bool passed() const { return verdict != Verdict::mismatch; }
};

inline bool is_library_variant(const char* variant) {
  if (variant == nullptr) return false;
  const std::string_view v(variant);
  return v.size() >= 7 && v.substr(v.size() - 7) == "/cublas";
}

// per_step: the kernels one step launches (one per library GEMM call); steps: the
// recorded steps; what: "forward" or "step", for the messages; cuda_device: the run
// was on a GPU (else a CPU run launches nothing to count).
inline KernelCount check_kernel_count(const prof::Recording& recording, int64_t per_step, int64_t steps,
                                      std::string_view what, bool cuda_device) {
  KernelCount k;
  k.expected = per_step * steps;
  if (!cuda_device) {
    k.verdict = KernelCount::Verdict::not_recorded;
    k.report = fmt::format("kernels: none recorded (CPU run); on a GPU this {} launches {}", what, per_step);
    return k;
  }
  if (!recording.use_cuda) {
    k.verdict = KernelCount::Verdict::not_recorded;
    k.report = fmt::format("kernels: not counted: CUDA activity was not recorded (--activities cpu); with it this {} "
                           "launches {}",
                           what, per_step);
    return k;
  }
  const prof::DeviceActivityInfo& activity = recording.device_activity;
  if (activity.source != "cupti") {
    k.verdict = KernelCount::Verdict::not_checked;
    k.report = fmt::format(
        "kernels: NOT CHECKED in this run: CUPTI did not record ({}).\n"
        "  The profiler fell back to timing each op with CUDA events, which sees ops, not kernels; another tool\n"
        "  holding CUPTI (ncu, cuda-gdb, nsys) does this. Without such a tool this {} launches {} kernel{}.",
        activity.error.empty() ? (activity.source.empty() ? std::string("no CUDA source") : activity.source)
                               : activity.error,
        what, per_step, per_step == 1 ? "" : "s");
    return k;
  }
  std::map<uint64_t, const prof::Event*> op_of_id;
  for (const prof::Event& e : recording.events)
    if (e.kind == prof::EventKind::cpu_op) {
      op_of_id[e.id] = &e;
      k.library_calls += is_library_variant(e.variant);
    }
  std::map<std::string, int64_t> own_kernels;
  for (const prof::Event& e : recording.events) {
    if (e.kind != prof::EventKind::kernel) continue;
    const auto it = op_of_id.find(e.id);
    const bool library = it != op_of_id.end() && is_library_variant(it->second->variant);
    if (!library && (e.name.starts_with("memcpy") || e.name.starts_with("memset"))) {
      ++k.copy_kernels[std::string(e.name)];
    } else if (library) {
      ++k.library;
      ++k.library_kernels[std::string(e.name)];
    } else {
      ++k.own;
      ++own_kernels[std::string(e.name)];
    }
  }
  const int64_t expected_own = k.expected - k.library_calls;
  const double per = 1.0 / static_cast<double>(steps);
  const std::string head = fmt::format("kernels: expected {} per {}, observed {} over {} step{} ({:.1f} per {})",
                                       per_step, what, k.own + k.library, steps, steps == 1 ? "" : "s",
                                       static_cast<double>(k.own + k.library) * per, what);
  auto list = [](const std::map<std::string, int64_t>& names) {
    std::string s;
    for (const auto& [name, count] : names) s += fmt::format("\n      {:>4} x {}", count, name);
    return s;
  };
  std::string copies;
  for (const auto& [name, count] : k.copy_kernels)
    copies += fmt::format("{}{} x {}", copies.empty() ? "" : ", ", count, name);
  if (!copies.empty()) copies = "\n  not counted: copies the CUDA graph ran as kernels (" + copies + ")";
  if (k.own == expected_own && k.library == k.library_calls) {
    k.verdict = KernelCount::Verdict::ok;
    k.report = head + ": OK" + copies;
  } else if (k.own == expected_own && k.library_calls > 0 && k.library > k.library_calls) {
    k.verdict = KernelCount::Verdict::library_choice;
    k.report = head + fmt::format(
                          ": OK, explained:\n"
                          "  our own kernels are as expected ({}); the difference is cuBLASLt's: for this shape it picked\n"
                          "  a different algorithm, {} kernels for {} GEMM calls ({:.3g} per call; split-K adds a reduce\n"
                          "  kernel). The library's kernels:{}",
                          k.own, k.library, k.library_calls,
                          static_cast<double>(k.library) / static_cast<double>(k.library_calls),
                          list(k.library_kernels)) + copies;
  } else {
    k.verdict = KernelCount::Verdict::mismatch;
    k.report = head + fmt::format(": MISMATCH\n  our own kernels: {}, expected {}; library GEMM kernels: {} for {} calls{}{}",
                                  k.own, expected_own, k.library, k.library_calls,
                                  own_kernels.empty() ? "" : "\n    ours:" + list(own_kernels),
                                  k.library_kernels.empty() ? "" : "\n    the library's:" + list(k.library_kernels)) +
               copies;
  }
  return k;
}

}  // namespace tutorial
