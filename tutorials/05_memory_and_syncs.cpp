// tutorials/05_memory_and_syncs.cpp: what readers of the series meet next: memory, hidden syncs, timing.
//
// Three lessons, one executable (--lesson memory|syncs|timing|all), on the GeGLU MLP of
// tutorial 03 (x [64, 128, 768], hidden 3072, bf16) and on one gelu kernel:
//   memory  profile_memory: the table's memory columns, which op allocated what, the peak of one
//           forward on each path (eager, fused, merged), and the caching allocator at work: the
//           first forward calls cudaMalloc, later ones reuse the cached blocks (TS_CUDA_NO_CACHING=1:
//           every tensor gets its own cudaMalloc and cudaFree).
//   syncs   a loop of forwards and a loss, without and with a read of the loss on the host every
//           step (item(), then ts::to(loss, cpu)): the read waits for the GPU, the CPU stops
//           running ahead, and the GPU idles while the CPU launches the next step.
//   timing  one gelu kernel timed eleven ways: its duration in the trace (L2 warm and flushed),
//           CUDA events around one call (GPU idle, L2 flushed, L2 warm), around many calls,
//           bench_timing.h's median, the host clock without and with a sync; and the profiler's
//           own cost per op.
// Each lesson prints what to expect, profiles, checks what it relies on (the memory events against
// the arithmetic of the shapes, the sync records, every result against float64) and returns
// non-zero when a check fails.
//
// Writes traces/05_memory_and_syncs/<config>[_<tag>].{json,txt}; draw a memory timeline with
//   ./build/dev/ts_trace_svg --memory TRACE.json --step N -o memory.svg
//
// Run: ./build/dev/tutorials/05_memory_and_syncs [--lesson memory|syncs|timing|all] [--batch 64]
//          [--seq 128] [--dim 768] [--hidden 3072] [--timing-rows 2048] [--dtype bf16|f16|f32]
//          [--warmup 0] [--active 3] [--device cpu|cuda] [--out-dir DIR] [--tag NAME]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "tensor/cuda_allocator.h"
#include "tutorials/mlp_reference.h"
#include "tutorials/tutorial_support.h"

#if TS_HAVE_CUDA  // the CUDA events of the timing lesson; a CPU-only build runs its CPU ways
#include <cuda_runtime_api.h>

#include "tensor/cuda_check.h"
#endif

namespace {

namespace nn = ts::nn;
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

// PyTorch's units, as the table prints them: 512 B, 48.00 MB (MB = 2^20 bytes).
std::string mem(int64_t bytes) { return prof::format_memory(bytes); }

std::string us_str(double us) { return fmt::format("{:.3f} us", us); }

double median(std::vector<double> v) { return v.empty() ? 0.0 : ts::bench::median(std::move(v)); }

// ---- profiling -----------------------------------------------------------------------------------

struct Profile {
  prof::EventList averages;
  prof::Recording recording;
  std::string json_path;
};

// Runs step() wait + warmup + active times under the flags' schedule, with CUDA activity on a GPU
// and profile_memory when asked; writes <out_dir>/<artifact_name(config)>.{json,txt}, prints the
// table sorted by `sort_by` and where the two files went.
Profile profile(const std::function<void()>& step, const tutorial::CommonFlags& f, ts::Device device,
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

// The recording's ProfilerStep#N events, in order.
std::vector<const Event*> steps_of(const prof::Recording& r) {
  std::vector<const Event*> steps;
  for (const Event& e : r.events)
    if (e.kind == EventKind::profiler_step) steps.push_back(&e);
  return steps;
}

bool within(const Event& e, const Event& scope) {
  return e.tid == scope.tid && e.start_ns >= scope.start_ns && e.start_ns <= scope.end_ns;
}

// The name of the scope an event sits in (ProfilerStep#N read as ProfilerStep*), or "(no scope)".
std::string scope_name(const prof::Recording& r, const Event& e) {
  if (e.parent < 0) return "(no scope)";
  const std::string name(r.events[static_cast<size_t>(e.parent)].name);
  return name.starts_with("ProfilerStep#") ? "ProfilerStep*" : name;
}

// CUPTI recorded this run's CUDA side (not the CUDA-event fallback another tool such as ncu causes).
bool cupti_recorded(const Profile& p) { return p.recording.device_activity.source == "cupti"; }

// ---- memory: what one step allocated and freed --------------------------------------------------

struct Bytes {
  int count = 0;
  int64_t bytes = 0;
  bool operator==(const Bytes&) const = default;
};

struct StepMemory {
  std::map<std::string, Bytes> allocated_by, freed_in;  // the scope an allocation / a free happened in
  int64_t allocated = 0, freed = 0;
  int64_t peak = 0;         // the highest running sum of the step's events, counted from its start
  std::string peak_scope;   // where the allocation that reached it happened
};

StepMemory step_memory(const prof::Recording& r, const Event& step, ts::Device device) {
  StepMemory m;
  int64_t live = 0;
  for (const Event& e : r.events) {
    if (e.kind != EventKind::memory || e.memory_device != device || !within(e, step)) continue;
    const std::string scope = scope_name(r, e);
    live += e.bytes;
    if (e.bytes > 0) {
      m.allocated_by[scope].count += 1;
      m.allocated_by[scope].bytes += e.bytes;
      m.allocated += e.bytes;
      if (live > m.peak) {
        m.peak = live;
        m.peak_scope = scope;
      }
    } else {
      m.freed_in[scope].count += 1;
      m.freed_in[scope].bytes -= e.bytes;
      m.freed -= e.bytes;
    }
  }
  return m;
}

// One forward's allocations on a path, op by op, from the shapes: what the table and the trace must show.
struct Allocation {
  const char* op;
  int64_t bytes;
  std::string what;
};

std::vector<Allocation> expected_allocations(nn::MlpPath path, const Flags& f, int64_t es) {
  const int64_t T = f.batch * f.seq, H = f.hidden, D = f.dim;
  const std::string th = fmt::format("[{}, {}]", T, H);
  switch (path) {
    case nn::MlpPath::eager:
      return {{"ts::mm", T * H * es, "gate(x) " + th},
              {"ts::mm", T * H * es, "up(x) " + th},
              {"ts::gelu", T * H * es, "gelu(gate) " + th},
              {"ts::mul", T * H * es, "gelu * up " + th},
              {"ts::mm", T * D * es, fmt::format("down(...) [{}, {}], the output", T, D)}};
    case nn::MlpPath::fused:
      return {{"ts::mm", T * H * es, "gate(x) " + th},
              {"ts::mm", T * H * es, "up(x) " + th},
              {"ts::geglu", T * H * es, "gelu(gate) * up " + th},
              {"ts::mm", T * D * es, fmt::format("down(...) [{}, {}], the output", T, D)}};
    case nn::MlpPath::merged:
      return {{"ts::mm", 2 * T * H * es, fmt::format("[gate; up](x) [{}, {}]", T, 2 * H)},
              {"ts::geglu", T * H * es, "gelu(gate) * up " + th},
              {"ts::mm", T * D * es, fmt::format("down(...) [{}, {}], the output", T, D)}};
    case nn::MlpPath::epilogue:
      break;  // not measured here: the lesson compares the three paths every GPU runs (tutorial 03 has this one)
  }
  return {};
}

std::map<std::string, Bytes> by_op(const std::vector<Allocation>& list) {
  std::map<std::string, Bytes> out;
  for (const Allocation& a : list) {
    out[a.op].count += 1;
    out[a.op].bytes += a.bytes;
  }
  return out;
}

int64_t total_bytes(const std::vector<Allocation>& list) {
  int64_t n = 0;
  for (const Allocation& a : list) n += a.bytes;
  return n;
}

// Runtime calls of one name inside a step.
int count_calls(const prof::Recording& r, const Event& step, std::string_view name, double* total_us = nullptr) {
  int n = 0;
  for (const Event& e : r.events) {
    if (e.kind != EventKind::cuda_runtime || e.name != name || !within(e, step)) continue;
    ++n;
    if (total_us != nullptr) *total_us += static_cast<double>(e.duration_ns()) / 1e3;
  }
  return n;
}

// bf16/f16: three GEMMs and the elementwise middle each round once.
double tolerance_for(ts::DType dtype) { return dtype == ts::DType::f32 ? 1e-4 : 2e-2; }

bool report_check(const char* what, double error, double tolerance) {
  const bool ok = error <= tolerance;
  fmt::print("check of {} against a float64 reference: {} (relative error {:.2e}, tolerance {:.0e})\n", what,
             ok ? "OK" : "FAILED", error, tolerance);
  return ok;
}

// A line that says whether a check of our own code held; false when it did not.
bool expect(bool ok, const std::string& what) {
  fmt::print("  {} {}\n", ok ? "OK      " : "MISMATCH", what);
  return ok;
}

// ---- lesson 1: memory ----------------------------------------------------------------------------

std::string shape_tag(const Flags& f) {
  return fmt::format("{}x{}x{}x{}_{}", f.batch, f.seq, f.dim, f.hidden, f.dtype);
}

// "_nocache" under TS_CUDA_NO_CACHING=1, so that its files sit beside the cached run's.
std::string allocator_tag(ts::Device device) {
  return device.is_cuda() && !ts::cuda::caching_enabled() ? "_nocache" : "";
}

void print_memory_expectations(const Flags& f, ts::Device device, int64_t es) {
  const int64_t T = f.batch * f.seq;
  fmt::print("Guess first, then look:\n");
  fmt::print("  - profile_memory adds the columns CPU Mem, Self CPU Mem{} to the table: bytes allocated\n"
             "    minus bytes freed while a row's scope was the innermost one (Self) or open (total). An op\n"
             "    that makes its output shows it as a positive Self value; where the tensors die, the frees\n"
             "    show as negative values (a row sums calls: `# of Calls` of them).\n",
             device.is_cuda() ? ", CUDA Mem, Self CUDA Mem" : "");
  fmt::print("  - one forward allocates, on each path ([T, H] = [{}, {}] is {} in {}; the order of the\n"
             "    first allocations is the compiler's, which evaluates a call's arguments in any order):\n",
             T, f.hidden, mem(T * f.hidden * es), f.dtype);
  for (nn::MlpPath path : {nn::MlpPath::eager, nn::MlpPath::fused, nn::MlpPath::merged}) {
    const std::vector<Allocation> list = expected_allocations(path, f, es);
    fmt::print("      {:<7}", nn::mlp_path_name(path));
    for (size_t i = 0; i < list.size(); ++i)
      fmt::print("{}{} {} ({})", i ? ",\n             " : "", list[i].op, mem(list[i].bytes), list[i].what);
    fmt::print("\n             peak {} = all of it\n", mem(total_bytes(list)));
  }
  fmt::print("  - the peak is the sum of the forward's allocations: in C++ the temporaries of one full\n"
             "    expression, `down(mul(gelu(gate(x)), up(x)))`, live until the expression ends, so the\n"
             "    forward holds every intermediate at once and frees them together when it returns (the\n"
             "    mlp_fwd row's negative Self Mem). Python frees gate(x) as soon as gelu has read it.\n"
             "  - fused and merged never hold the gelu output: one [T, H] less than eager ({} less).\n",
             mem(T * f.hidden * es));
  fmt::print("  - the previous step's output is freed when the new one is assigned, after mlp_fwd: a\n"
             "    negative Self Mem of {} on the ProfilerStep* row, per step.\n",
             mem(T * f.dim * es));
  if (device.is_cuda())
    fmt::print("  - the caching allocator: the first forward calls cudaMalloc for its blocks (and cuBLAS\n"
               "    once for its 32 MB workspace); a later forward finds them cached and calls none.\n"
               "    ts::cuda::memory_stats() counts the allocator's cudaMalloc calls. Under\n"
               "    TS_CUDA_NO_CACHING=1 every tensor is a cudaMalloc and a cudaFree, on every step, and\n"
               "    cudaFree waits for the whole device.\n");
  fmt::print("\n");
}

// The first forwards of the process, recorded from the very first (schedule wait 0, warmup 0):
// where cudaMalloc happens, step by step, against the allocator's own count.
bool memory_first_steps(const Flags& f, ts::Device device, nn::GeGLUMLP& mlp, const ts::Tensor& x) {
  tutorial::CommonFlags cold = f;
  cold.schedule_wait = 0;
  cold.schedule_warmup = 0;
  cold.active = std::max(f.active, 3);
  mlp.set_path(nn::MlpPath::eager);
  ts::Tensor y;
  const ts::AllocatorStats before = device.is_cuda() ? ts::cuda::memory_stats() : ts::AllocatorStats{};
  fmt::print("-- the first {} forwards of the process (eager), recorded from the first: schedule wait 0, warmup 0\n",
             cold.active);
  if (device.is_cuda())
    fmt::print("memory_stats() before: allocated {}, reserved {}, cudaMalloc calls {} (x and the weights)\n",
               mem(before.allocated), mem(before.reserved), before.num_allocs);
  const Profile p = profile([&] { y = mlp.forward(x); }, cold, device,
                            fmt::format("{}_first_forwards_eager{}", shape_tag(f), allocator_tag(device)),
                            /*memory=*/true, "cpu_time_total", /*row_limit=*/20);
  if (!device.is_cuda()) {
    fmt::print("(CPU run: no caching allocator; every tensor is one aligned_alloc and one free)\n\n");
    return true;
  }
  const ts::AllocatorStats after = ts::cuda::memory_stats();
  fmt::print("memory_stats() after:  allocated {}, reserved {}, cudaMalloc calls {} ({} more)\n", mem(after.allocated),
             mem(after.reserved), after.num_allocs, after.num_allocs - before.num_allocs);
  if (!cupti_recorded(p)) {
    fmt::print("(CUPTI did not record this run: no runtime calls to count)\n\n");
    return true;
  }
  const std::vector<const Event*> steps = steps_of(p.recording);
  bool ok = true;
  int mallocs = 0;
  const bool caching = ts::cuda::caching_enabled();
  for (size_t i = 0; i < steps.size(); ++i) {
    double malloc_us = 0, free_us = 0;
    const int m = count_calls(p.recording, *steps[i], "cudaMalloc", &malloc_us);
    const int fr = count_calls(p.recording, *steps[i], "cudaFree", &free_us);
    const StepMemory sm = step_memory(p.recording, *steps[i], device);
    int allocs = 0, frees = 0;
    for (const auto& [scope, b] : sm.allocated_by) allocs += b.count;
    for (const auto& [scope, b] : sm.freed_in) frees += b.count;
    mallocs += m;
    fmt::print("{}: {:.3f} us; {} allocations, {} frees; cudaMalloc {} ({:.3f} us), cudaFree {} ({:.3f} us)\n",
               steps[i]->name, static_cast<double>(steps[i]->duration_ns()) / 1e3, allocs, frees, m, malloc_us, fr,
               free_us);
    if (!caching) {
      // Every allocation is a cudaMalloc, every free a cudaFree (step 0 adds cuBLAS's own).
      ok &= expect((i == 0 ? m >= allocs : m == allocs) && fr == frees,
                   fmt::format("TS_CUDA_NO_CACHING=1: cudaMalloc {} allocations, cudaFree = frees",
                               i == 0 ? ">=" : "="));
    }
  }
  // Every cudaMalloc of the allocator is in the trace; the others are cuBLAS's (its handle and
  // 32 MB workspace, at the process's first GEMM).
  const int64_t ours = after.num_allocs - before.num_allocs;
  ok &= expect(mallocs >= ours, fmt::format("cudaMalloc calls in the trace: {}; the allocator's (memory_stats): {}; "
                                            "cuBLAS's at its first GEMM: {}",
                                            mallocs, ours, mallocs - ours));
  if (caching)
    ok &= expect(count_calls(p.recording, *steps.back(), "cudaMalloc") == 0,
                 fmt::format("{} calls no cudaMalloc: every block comes from the cache", steps.back()->name));
  fmt::print("\n");
  return ok;
}

bool memory_path(const Flags& f, ts::Device device, nn::GeGLUMLP& mlp, const ts::Tensor& x, nn::MlpPath path,
                 int64_t es) {
  mlp.set_path(path);
  ts::Tensor y;
  const auto forward = [&] { y = mlp.forward(x); };
  for (int i = 0; i < f.warmup; ++i) forward();
  fmt::print("-- path {}\n", nn::mlp_path_name(path));
  const Profile p = profile(forward, f, device,
                            fmt::format("{}_{}_memory_{}{}", shape_tag(f), f.temperature(), nn::mlp_path_name(path),
                                        allocator_tag(device)),
                            /*memory=*/true, device.is_cuda() ? "self_cuda_memory_usage" : "self_cpu_memory_usage",
                            /*row_limit=*/15);
  const std::vector<Allocation> want = expected_allocations(path, f, es);
  const std::map<std::string, Bytes> want_by_op = by_op(want);
  const std::vector<const Event*> steps = steps_of(p.recording);
  bool ok = !steps.empty();
  for (const Event* step : steps) {
    const StepMemory m = step_memory(p.recording, *step, device);
    int tensors = 0;
    for (const auto& [scope, b] : m.allocated_by) tensors += b.count;
    fmt::print("{}: allocated {} in {} tensors, freed {}; peak {} above the step's start (reached in {})\n", step->name,
               mem(m.allocated), tensors, mem(m.freed), mem(m.peak), m.peak_scope);
    if (step == steps.front()) {
      fmt::print("  allocated in:");
      for (const auto& [scope, b] : m.allocated_by) fmt::print(" {} {} ({} tensor{});", scope, mem(b.bytes), b.count, b.count == 1 ? "" : "s");
      fmt::print("\n  freed in:    ");
      for (const auto& [scope, b] : m.freed_in) fmt::print(" {} {} ({} tensor{});", scope, mem(b.bytes), b.count, b.count == 1 ? "" : "s");
      fmt::print("\n");
    }
    ok &= expect(m.allocated_by == want_by_op, "the allocations by op are the forward's, from the shapes");
    ok &= expect(m.peak == total_bytes(want), fmt::format("the peak is their sum, {}", mem(total_bytes(want))));
  }
  if (device.is_cuda()) {
    // The allocator's own high-water mark over one more forward: blocks as handed out (sizes rounded
    // up to 512 B; a cached block is split only when more than 1 MB would be left over).
    ts::cuda::synchronize();
    ts::cuda::reset_peak_memory_stats();
    const int64_t base = ts::cuda::memory_stats().allocated;
    forward();
    ts::cuda::synchronize();
    const int64_t peak = ts::cuda::memory_stats().peak_allocated - base;
    int64_t rounded = 0;
    for (const Allocation& a : want) rounded += (a.bytes + 511) / 512 * 512;
    fmt::print("memory_stats().peak_allocated over one more forward: {} above its start\n", mem(peak));
    ok &= expect(peak >= rounded && peak <= rounded + static_cast<int64_t>(want.size()) * (int64_t{1} << 20),
                 fmt::format("the allocator's peak is the trace's, rounded to its blocks ({} to {} MB more)", mem(rounded),
                             want.size()));
  }
  fmt::print("draw it: ./build/dev/ts_trace_svg --memory {} --step {} -o memory_{}.svg\n",
             p.json_path, f.first_recorded_step(), nn::mlp_path_name(path));
  const double error = tutorial::mlp_sampled_error(mlp, x, y, 3);  // the first, middle and last token
  ok &= report_check("3 output rows", error, tolerance_for(ts::parse_dtype(f.dtype)));
  fmt::print("\n");
  return ok;
}

bool lesson_memory(const Flags& f, ts::Device device) {
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const auto es = static_cast<int64_t>(ts::element_size(dtype));
  fmt::print("== Lesson 1: memory. The GeGLU MLP, x [{}, {}, {}], hidden {}  {}  {}\n\n", f.batch, f.seq, f.dim,
             f.hidden, f.dtype, device.str());
  print_memory_expectations(f, device, es);
  ts::manual_seed(0);
  nn::GeGLUMLP mlp(f.dim, f.hidden, nn::MlpPath::eager, {dtype, device}, "mlp_fwd");
  const ts::Tensor x = ts::randn({f.batch, f.seq, f.dim}, {dtype, device});
  bool ok = memory_first_steps(f, device, mlp, x);
  for (nn::MlpPath path : {nn::MlpPath::eager, nn::MlpPath::fused, nn::MlpPath::merged})
    ok &= memory_path(f, device, mlp, x, path, es);
  return ok;
}

// ---- lesson 2: hidden synchronizations ------------------------------------------------------------

enum class Read { none, item, to_cpu };
const char* read_name(Read r) { return r == Read::none ? "none" : r == Read::item ? "item" : "to_cpu"; }

// The GPU side of the window, as the trace shows it.
struct Timeline {
  double gpu_busy_us = 0, gpu_idle_us = 0;  // between the first and the last GPU work of the window
  double launch_delay_median_us = 0, launch_delay_max_us = 0;  // a kernel's start minus its launch call's start
  int kernels = 0;
};

Timeline timeline_of(const prof::Recording& r) {
  std::map<uint64_t, int64_t> launch_start;  // correlation -> start of the call
  std::vector<const Event*> work;
  for (const Event& e : r.events) {
    if ((e.kind == EventKind::cuda_runtime || e.kind == EventKind::cuda_driver) && e.correlation != 0)
      launch_start.emplace(e.correlation, e.start_ns);
    if (e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset) work.push_back(&e);
  }
  Timeline t;
  std::sort(work.begin(), work.end(), [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  std::vector<double> delays;
  int64_t covered_to = 0;
  for (const Event* e : work) {
    if (covered_to != 0 && e->start_ns > covered_to) t.gpu_idle_us += static_cast<double>(e->start_ns - covered_to) / 1e3;
    covered_to = std::max(covered_to, e->end_ns);
    t.gpu_busy_us += static_cast<double>(e->duration_ns()) / 1e3;
    if (e->kind != EventKind::kernel) continue;
    ++t.kernels;
    if (const auto it = launch_start.find(e->correlation); it != launch_start.end())
      delays.push_back(static_cast<double>(e->start_ns - it->second) / 1e3);
  }
  if (!delays.empty()) {
    t.launch_delay_median_us = median(delays);
    t.launch_delay_max_us = *std::max_element(delays.begin(), delays.end());
  }
  return t;
}

// The checks of one read per step: the call, the copy it waits for and, for to(cpu), the sync record.
bool check_reads(const Profile& p, Read read, int active) {
  const prof::Recording& r = p.recording;
  std::map<uint64_t, const Event*> gpu_by_correlation;
  for (const Event& e : r.events)
    if ((e.kind == EventKind::memcpy || e.kind == EventKind::cuda_sync) && e.correlation != 0)
      gpu_by_correlation.emplace(e.correlation, &e);
  int dtoh = 0, reads = 0, waited = 0;
  for (const Event& e : r.events)
    if (e.kind == EventKind::memcpy && e.name.find("DtoH") != std::string_view::npos) ++dtoh;
  const std::string_view call = read == Read::item ? "cudaMemcpy" : "cudaStreamSynchronize";
  for (const Event& e : r.events) {
    if (e.kind != EventKind::cuda_runtime || e.name != call) continue;
    ++reads;
    const auto it = gpu_by_correlation.find(e.correlation);
    if (it == gpu_by_correlation.end()) continue;
    const Event& g = *it->second;
    // The call returns only once the GPU is done with what it waits for (GPU times are put on the
    // CPU's clock to within about a microsecond: allow a few).
    constexpr int64_t kClockSlackNs = 5'000;
    const bool right_kind = read == Read::item ? g.kind == EventKind::memcpy : g.name == "Stream Sync";
    if (right_kind && g.end_ns <= e.end_ns + kClockSlackNs) ++waited;
  }
  bool ok = true;
  if (read == Read::none) return expect(dtoh == 0, "no device-to-host copy in the window");
  ok &= expect(dtoh == active, fmt::format("{} device-to-host copies of the loss, one per step", dtoh));
  ok &= expect(reads == active && waited == active,
               fmt::format("{} {} calls, one per step, each joined (same correlation, a flow in the trace) to {} "
                           "that ends before the call returns: {}",
                           reads, call, read == Read::item ? "its Memcpy DtoH" : "a Stream Sync record", waited));
  return ok;
}

bool lesson_syncs(const Flags& f, ts::Device device) {
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const int64_t T = f.batch * f.seq;
  fmt::print("== Lesson 2: hidden synchronizations. A loop of fused-MLP forwards and a loss, x [{}, {}, {}], "
             "hidden {}  {}  {}\n\n",
             f.batch, f.seq, f.dim, f.hidden, f.dtype, device.str());
  fmt::print("Guess first, then look:\n");
  // In f16 the total of the row sums (8192 rows of about 768) would overflow (65504 at most): there
  // the rows are added in f32.
  const bool f32_total = dtype == ts::DType::f16;
  const ts::DType loss_dtype = f32_total ? ts::DType::f32 : dtype;
  fmt::print("  - each step: y = mlp(x); loss = {}, a one-element tensor on the device{}.\n"
             "    Three loops: none (the loss stays {}), item (loss.item<float>() every step), to_cpu\n"
             "    (ts::to(loss, cpu) every step).\n",
             f32_total ? "sum(to(sum(y * y, 1), f32), 0)" : "sum(sum(y * y, 1), 0)",
             f32_total ? " (its rows added in f32: in f16 their total would overflow)" : "",
             device.is_cuda() ? "on the GPU" : "where it is");
  if (device.is_cuda()) {
    fmt::print("  - none: the CPU only queues work. It finishes a step's launches long before the GPU has run\n"
               "    them and goes on to the next: a kernel starts long after its launch call (the queue),\n"
               "    the GPU never waits, and the wait comes once, in the cudaDeviceSynchronize that ends the\n"
               "    window.\n"
               "  - item: item() is not an op here: it is a plain cudaMemcpy of the {}-byte loss to the host.\n"
               "    The copy waits behind the whole step's GPU work, so the cudaMemcpy row's CPU time is about\n"
               "    the step's GPU time. The table shows it as a runtime row under ProfilerStep*, with no op\n"
               "    around it; the trace shows its flow arrow to a Memcpy DtoH at the end of the step's kernels.\n"
               "    The GPU then idles while the CPU launches the next step; kernels start soon after their\n"
               "    launch.\n"
               "  - to_cpu: an op. ts::to -> ts::copy_ -> cudaMemcpyAsync + cudaStreamSynchronize, as PyTorch's\n"
               "    item() is aten::item -> aten::_local_scalar_dense -> cudaMemcpyAsync + cudaStreamSynchronize.\n"
               "    The culprit is the op with the large CPU total; the trace shows a Stream Sync on the\n"
               "    stream's lane with the sync call's flow. Printing a CUDA tensor (str()) reads it the same way.\n",
               ts::element_size(loss_dtype));
  } else {
    fmt::print("  - on the CPU every op has finished when it returns: reading the loss waits for nothing, the\n"
               "    three loops cost the same. Run with --device cuda to see the waits.\n");
  }
  fmt::print("\n");

  ts::manual_seed(0);
  const nn::GeGLUMLP mlp(f.dim, f.hidden, nn::MlpPath::fused, {dtype, device}, "mlp_fwd");
  const ts::Tensor x = ts::randn({f.batch, f.seq, f.dim}, {dtype, device});
  ts::Tensor y, loss;
  float read_value = 0;
  bool ok = true;
  std::map<std::string, float> losses;
  std::map<std::string, double> wall_us;
  for (Read read : {Read::none, Read::item, Read::to_cpu}) {
    const auto step = [&] {
      y = mlp.forward(x);
      const ts::Tensor rows = ts::sum(ts::mul(y, y).view({T, f.dim}), 1);
      loss = ts::sum(f32_total ? ts::to(rows, ts::DType::f32) : rows, 0);
      if (read == Read::item) read_value = loss.item<float>();
      if (read == Read::to_cpu) read_value = ts::to(loss, ts::kCPU).item<float>();
    };
    for (int i = 0; i < f.warmup; ++i) step();
    fmt::print("-- loop {}\n", read_name(read));
    const Profile p = profile(step, f, device, fmt::format("{}_{}_syncs_{}", shape_tag(f), f.temperature(), read_name(read)),
                              /*memory=*/false, "cpu_time_total", /*row_limit=*/14);
    // The same loop without the profiler, on the host's clock: the step's real cost.
    const int kSteps = device.is_cuda() ? 20 : 5;
    if (device.is_cuda()) ts::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSteps; ++i) step();
    if (device.is_cuda()) ts::cuda::synchronize();
    const double per_step =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kSteps;
    wall_us[read_name(read)] = per_step;
    losses[read_name(read)] = loss.item<float>();
    const prof::KeyAverage* step_row = p.averages.find("ProfilerStep*");
    fmt::print("per step: {} on the host clock ({} steps, unprofiled, synchronized at the end); CPU time {} "
               "(ProfilerStep*, profiled)\n",
               us_str(per_step), kSteps, us_str(step_row != nullptr ? step_row->cpu_time_us() : 0.0));
    if (device.is_cuda() && cupti_recorded(p)) {
      const Timeline t = timeline_of(p.recording);
      fmt::print("GPU in the window: busy {} ({} per step), idle {} between its first and last work ({} per "
                 "step); a kernel starts {} after its launch call (median), {} at most\n",
                 us_str(t.gpu_busy_us), us_str(t.gpu_busy_us / f.active), us_str(t.gpu_idle_us),
                 us_str(t.gpu_idle_us / f.active), us_str(t.launch_delay_median_us), us_str(t.launch_delay_max_us));
      for (const char* row : {"cudaMemcpy", "ts::to", "cudaStreamSynchronize", "cudaDeviceSynchronize"})
        if (const prof::KeyAverage* k = p.averages.find(row))
          fmt::print("  {:<22} CPU total {} in {} calls\n", row, us_str(k->cpu_time_total_us()), k->count);
      ok &= check_reads(p, read, f.active);
    } else if (device.is_cuda()) {
      fmt::print("(CUPTI did not record this run: the sync records cannot be checked)\n");
    }
    fmt::print("\n");
  }
  // Every loop computed the same loss from the same inputs.
  const std::vector<double> yv = y.to_vector<double>();
  double ref = 0;
  for (double v : yv) ref += v * v;
  const auto agree = [&](float a, float b) { return std::abs(a - b) <= tolerance_for(dtype) * std::abs(b); };
  ok &= expect(agree(losses["item"], losses["none"]) && agree(losses["to_cpu"], losses["none"]),
               fmt::format("the three loops computed the same loss: {}, {}, {}", losses["none"], losses["item"],
                           losses["to_cpu"]));
  ok &= report_check("the loss", std::abs(losses["none"] - ref) / ref, tolerance_for(dtype));
  if (device.is_cuda())
    fmt::print("per step on the host clock: none {}, item {}, to_cpu {}\n", us_str(wall_us["none"]),
               us_str(wall_us["item"]), us_str(wall_us["to_cpu"]));
  fmt::print("\n");
  (void)read_value;
  return ok;
}

// ---- lesson 3: profiling vs benchmarking ----------------------------------------------------------

struct Way {
  std::string name;
  double us;  // < 0: not measured on this device
  std::string what;
};

bool lesson_timing(const Flags& f, ts::Device device) {
  const ts::DType dtype = ts::parse_dtype(f.dtype);
  const int64_t rows = f.timing_rows, cols = f.hidden;
  const auto es = static_cast<int64_t>(ts::element_size(dtype));
  const int64_t moved = 2 * rows * cols * es;  // read x, write gelu(x)
  const int64_t l2 = device.is_cuda() ? ts::cuda::device_properties().l2_cache_bytes : 0;
  constexpr int kCallsPerStep = 10, kRepeats = 50, kBatch = 100;
  fmt::print("== Lesson 3: profiling vs benchmarking. One {}: gelu (tanh) on [{}, {}] {}  {}\n\n",
             device.is_cuda() ? "kernel" : "op", rows, cols, f.dtype, device.str());
  fmt::print("Guess first, then look:\n");
  fmt::print("  - each call reads {} and writes {}: {} moved{}.\n", mem(rows * cols * es), mem(rows * cols * es),
             mem(moved),
             device.is_cuda() ? fmt::format("; the L2 cache holds {}, so {}", mem(l2),
                                            moved <= l2 ? "a call right after another finds its input in L2 (warm)"
                                                        : "a call never finds all of its input in L2")
                              : "");
  if (device.is_cuda())
    fmt::print("  - the trace times the kernel alone, on the GPU's clock (CUPTI). CUDA events time what the\n"
               "    GPU did between them: around one call on an idle GPU that includes the launch (the kernel\n"
               "    arrives microseconds after the start event); after a busy memset it is the kernel alone\n"
               "    (bench/bench_timing.h: the memset also empties L2, so ts_bench and ts_ladder time every\n"
               "    call from HBM, as in a model); around {} calls in a row they time the throughput, which\n"
               "    the CPU bounds when a call's launch takes longer than its kernel.\n"
               "  - the host clock without a sync times only the CPU's part: the dispatch and the launch\n"
               "    (the kernel runs later). With a sync before and after it adds the kernel and the\n"
               "    sync's round trip.\n"
               "  - the profiler costs CPU time per op (its records, CUPTI's callbacks), not GPU time.\n",
               kBatch);
  else
    fmt::print("  - on the CPU an op has finished when it returns: the trace's op time and the host clock\n"
               "    agree. CUDA events, L2 and syncs are GPU matters (--device cuda).\n"
               "  - the profiler costs CPU time per op: its records.\n");
  fmt::print("\n");

  ts::manual_seed(0);
  const ts::Options opt{dtype, device};
  const ts::Tensor a = ts::randn({rows, cols}, opt);
  ts::Tensor out;
  const auto call = [&] { out = ts::gelu(a, ts::GeluApprox::tanh); };
  const auto sync = [&] {
    if (device.is_cuda()) ts::cuda::synchronize();
  };
  for (int i = 0; i < 3; ++i) call();
  sync();

  std::vector<Way> ways;
  bool ok = true;
  // 1. The trace: the kernel's duration (GPU) or the op's (CPU), median of every call recorded.
  const auto trace_median = [&](const Profile& p) {
    std::vector<double> d;
    std::map<uint64_t, bool> gelu_ids;
    for (const Event& e : p.recording.events)
      if (e.kind == EventKind::cpu_op && e.name == "ts::gelu") gelu_ids[e.id] = true;
    for (const Event& e : p.recording.events) {
      const bool is_kernel = e.kind == EventKind::kernel && gelu_ids.contains(e.id);
      const bool is_op = !device.is_cuda() && e.kind == EventKind::cpu_op && e.name == "ts::gelu";
      if (is_kernel || is_op) d.push_back(static_cast<double>(e.duration_ns()) / 1e3);
    }
    if (device.is_cuda() && !cupti_recorded(p)) {
      fmt::print("(CUPTI did not record this run ({}): no kernel records, no kernel durations)\n",
                 p.recording.device_activity.error);
      return -1.0;
    }
    ok &= expect(static_cast<int>(d.size()) == kCallsPerStep * f.active,
                 fmt::format("the trace holds {} gelu {}, one per call", d.size(), device.is_cuda() ? "kernels" : "ops"));
    return median(d);
  };
  fmt::print("-- the trace, {} calls per step\n", kCallsPerStep);
  const std::string tag = fmt::format("{}x{}_{}", rows, cols, f.dtype);
  const Profile warm = profile([&] { for (int i = 0; i < kCallsPerStep; ++i) call(); }, f, device,
                               fmt::format("{}_timing_gelu{}", tag, allocator_tag(device)), false,
                               device.is_cuda() ? "cuda_time_total" : "cpu_time_total", 10);
  ways.push_back({device.is_cuda() ? "trace: the kernel's duration, L2 warm" : "trace: the op's duration",
                  trace_median(warm),
                  device.is_cuda() ? "CUPTI's record of each kernel, calls back to back" : "the op's CPU time"});
  ts::Tensor flush;
  if (device.is_cuda()) {
    // 256 MB written before every call empties the L2 (a fill_ kernel in the trace).
    flush = ts::empty({int64_t{64} << 20}, {ts::DType::f32, device});
    int k = 0;
    fmt::print("-- the trace, a 256 MB fill_ before each call\n");
    const Profile cold = profile([&] {
      for (int i = 0; i < kCallsPerStep; ++i) {
        ts::fill_(flush, ++k);
        call();
      }
    }, f, device, fmt::format("{}_timing_gelu_flushed{}", tag, allocator_tag(device)), false, "cuda_time_total", 10);
    ways.push_back({"trace: the kernel's duration, L2 flushed", trace_median(cold), "a 256 MB fill_ before each call"});
  }

#if TS_HAVE_CUDA
  // 2. CUDA events around one call, in three settings, and around many calls.
  if (device.is_cuda()) {
    const ts::bench::CudaEvent start, stop;
    const cudaStream_t stream = ts::cuda::current_stream();
    const auto events_us = [&](const std::function<void()>& before, const std::function<void()>& timed, int per) {
      std::vector<double> samples;
      for (int r = 0; r < kRepeats; ++r) {
        before();
        TS_CUDA_CHECK(cudaEventRecord(start.get(), stream));
        timed();
        TS_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
        TS_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        float ms = 0;
        TS_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
        samples.push_back(static_cast<double>(ms) * 1e3 / per);
      }
      return median(samples);
    };
    const auto memset_flush = [&] {
      TS_CUDA_CHECK(cudaMemsetAsync(flush.data_ptr(), 0, static_cast<size_t>(flush.numel()) * flush.element_size(), stream));
    };
    ways.push_back({"CUDA events, 1 call, GPU idle", events_us(sync, call, 1),
                    "synchronized first: the launch's latency + the kernel"});
    ways.push_back({"CUDA events, 1 call, after a memset", events_us(memset_flush, call, 1),
                    "the GPU busy, L2 flushed: bench_timing.h's way"});
    ways.push_back({"CUDA events, 1 call, after a memset + 1 call", events_us([&] { memset_flush(); call(); }, call, 1),
                    "the GPU busy, L2 warm from the call before"});
    ways.push_back({fmt::format("CUDA events, {} calls in a row / {}", kBatch, kBatch),
                    events_us(sync, [&] { for (int i = 0; i < kBatch; ++i) call(); }, kBatch),
                    "throughput: max(kernel, the CPU's launch rate)"});
    std::vector<double> bench = ts::bench::device_times_ms(call, /*warmup=*/3, kRepeats);
    for (double& v : bench) v *= 1e3;
    ways.push_back({"ts::bench::device_times_ms (median)", median(bench), "what ts_bench and ts_ladder report"});
  }
#endif

  // 3. The host's clock around one call, without and with a sync.
  const auto host_us = [&](bool synced) {
    std::vector<double> samples;
    for (int r = 0; r < kRepeats; ++r) {
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      call();
      if (synced) sync();
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(samples);
  };
  ways.push_back({"host clock, 1 call, no sync", host_us(false),
                  device.is_cuda() ? "the CPU's dispatch + launch; the kernel runs after" : "the whole op"});
  if (device.is_cuda())
    ways.push_back({"host clock, 1 call + sync", host_us(true), "dispatch + launch + kernel + the sync's round trip"});

  // 4. The profiler's own cost per op, on a one-element gelu (so that the op's own work is small):
  // the host's time per call, recording (CUDA activity too on a GPU) or not.
  const ts::Tensor one = ts::randn({1}, opt);
  const auto tiny_batch_us = [&] {
    constexpr int kTiny = 1000;
    std::vector<double> samples;
    for (int r = 0; r < 5; ++r) {
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kTiny; ++i) ts::gelu(one, ts::GeluApprox::tanh);
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kTiny);
    }
    sync();
    return median(samples);
  };
  tiny_batch_us();  // first-use costs
  const double plain = tiny_batch_us();
  double profiled = 0;
  {
    prof::ProfilerConfig config;
    if (device.is_cuda()) config.activities.push_back(prof::Activity::CUDA);
    prof::Profiler p(config);
    prof::ProfilerGuard guard(p);
    profiled = tiny_batch_us();
  }
  ways.push_back({"host clock per call, gelu of 1 element, not profiled", plain, "1000 calls in a row"});
  ways.push_back({"host clock per call, gelu of 1 element, profiled", profiled,
                  fmt::format("the profiler adds {} per op", us_str(profiled - plain))});

  fmt::print("-- one {}, timed {} ways (medians: of every call in a trace, of {} samples for one call, of 5 "
             "batches for many calls)\n",
             device.is_cuda() ? "kernel" : "op", ways.size(), kRepeats);
  for (const Way& w : ways)
    fmt::print("  {:<52} {:>12}   {}\n", w.name, w.us < 0 ? std::string("-") : us_str(w.us), w.what);
  if (!device.is_cuda())
    fmt::print("  (CUDA events, L2 and syncs: --device cuda)\n");
  else
    fmt::print("For what happens inside the kernel (bandwidth, stalls, the source line of each), move to Nsight\n"
               "Compute:\n"
               "  ncu --section SpeedOfLight --kernel-name-base demangled -k regex:GeluTanh -c 1 \\\n"
               "      ./build/dev/tutorials/05_memory_and_syncs --lesson timing\n"
               "(the dev preset builds with -lineinfo for ncu's source view; ncu empties the caches before each\n"
               "replay and fixes the clock; while it runs, CUPTI is ncu's: the profiler falls back to CUDA events\n"
               "and says so).\n");

  // gelu against float64 on a few elements.
  const std::vector<double> in = a.view({-1}).to_vector<double>(), got = out.view({-1}).to_vector<double>();
  const double c = std::sqrt(2.0 / std::numbers::pi);
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < in.size(); i += std::max<size_t>(1, in.size() / 997)) {
    const double v = in[i], ref = 0.5 * v * (1 + std::tanh(c * (v + 0.044715 * v * v * v)));
    diff2 += (got[i] - ref) * (got[i] - ref);
    ref2 += ref * ref;
  }
  ok &= report_check("gelu on ~1000 elements", std::sqrt(diff2 / ref2), dtype == ts::DType::f32 ? 1e-5 : 1e-2);
  fmt::print("\n");
  return ok;
}

int run(Flags f) {
  const ts::Device device = ts::Device::parse(f.device);
  ts::check_device_available(device, "05_memory_and_syncs");
  tutorial::choose_dtype(f, device);  // bf16, or f16 on a GPU without bf16 tensor cores
  if (f.batch < 0) f.batch = device.is_cuda() ? 64 : 8;
  if (f.timing_rows < 0) f.timing_rows = device.is_cuda() ? 2048 : 256;
  tutorial::prepare_out_dir(f.out_dir);
  if (device.is_cuda())
    fmt::print("caching allocator: {}\n\n", ts::cuda::caching_enabled() ? "on" : "off (TS_CUDA_NO_CACHING=1)");
  bool ok = true;
  if (f.lesson == "memory" || f.lesson == "all") ok &= lesson_memory(f, device);
  if (f.lesson == "syncs" || f.lesson == "all") ok &= lesson_syncs(f, device);
  if (f.lesson == "timing" || f.lesson == "all") ok &= lesson_timing(f, device);
  fmt::print("{}\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tutorial::run_guarded([&] {
    Flags f;
    CLI::App app{"Tutorial 05: memory, hidden synchronizations, profiling vs benchmarking"};
    app.add_option("--lesson", f.lesson, "which lesson runs (default all of them)")
        ->check(tutorial::one_of({"memory", "syncs", "timing", "all"}));
    app.add_option("--batch", f.batch, "batch (default 64 on a GPU, 8 on the CPU)")->check(tutorial::in_range(1, 1 << 12));
    app.add_option("--seq", f.seq, "sequence length (default 128)")->check(tutorial::in_range(1, 1 << 16));
    app.add_option("--dim", f.dim, "model dim (default 768)")->check(tutorial::in_range(1, 1 << 16));
    app.add_option("--hidden", f.hidden, "hidden dim (default 3072)")->check(tutorial::in_range(1, 1 << 18));
    app.add_option("--timing-rows", f.timing_rows,
                   "rows of the timing lesson's [rows, hidden] gelu (default 2048 on a GPU, 256 on the CPU)")
        ->check(tutorial::in_range(1, 1 << 20));
    tutorial::add_common_flags(app, f, "traces/05_memory_and_syncs");
    if (const auto code = tutorial::parse_flags(app, argc, argv)) return *code;
    return run(f);
  });
}
