// tutorials/05_memory_and_syncs/lesson1_memory.cpp: tutorial 05's lesson 1: memory.
//
// profile_memory on the GeGLU MLP of tutorial 03 (x [64, 128, 768], hidden 3072, bf16 on a GPU):
//   - the table's memory columns: which op allocated what, where the frees land (negative values);
//   - the peak of one forward on each path (eager, fused, merged), against the arithmetic of the
//     shapes: C++ keeps every temporary of `down(mul(gelu(gate(x)), up(x)))` until the expression
//     ends, so the peak is the sum of the forward's allocations;
//   - the caching allocator at work: the first forward calls cudaMalloc, later ones reuse the cached
//     blocks (TS_CUDA_NO_CACHING=1: every tensor gets its own cudaMalloc and cudaFree).
// Checks the memory events against the shapes, the allocator's own counters, every output against
// float64; returns false when a check fails.
//
// Writes traces/05_memory_and_syncs/<B>x<S>x<D>x<H>_<dtype>_{first_forwards_eager_wait0_warmup0,
// <cold|warm>_memory_<path>}[_nocache].{json,txt}; draw one step's memory timeline with
//   ./build/dev/ts_trace_svg --memory TRACE.json --step N -o memory.svg
//
// Run: ./build/dev/tutorials/05_memory_and_syncs --lesson memory [--warmup 5] [--batch 64] [--seq 128]
//          [--dim 768] [--hidden 3072] [--dtype bf16|f16|f32] [--device cpu|cuda]
//      TS_CUDA_NO_CACHING=1 ./build/dev/tutorials/05_memory_and_syncs --lesson memory --warmup 5
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "tutorials/05_memory_and_syncs/lessons.h"
#include "tutorials/mlp_reference.h"

namespace memory_and_syncs {
namespace {

namespace nn = ts::nn;

// ---- memory: what one step allocated and freed --------------------------------------------------

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

// ---- the lesson: what to expect, the first forwards of the process, each path -------------------

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

}  // namespace

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

}  // namespace memory_and_syncs
