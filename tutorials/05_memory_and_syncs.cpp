// tutorials/05_memory_and_syncs.cpp: what readers of the series meet next: memory, hidden syncs, timing.
//
// Three lessons, one executable (--lesson memory|syncs|timing|all), on the GeGLU MLP of
// tutorial 03 (x [64, 128, 768], hidden 3072, bf16) and on one gelu kernel; each lesson is a file
// of its own in tutorials/05_memory_and_syncs/, this one picks which run:
//   memory  lesson1_memory.cpp. profile_memory: the table's memory columns, which op allocated
//           what, the peak of one forward on each path (eager, fused, merged), and the caching
//           allocator at work: the first forward calls cudaMalloc, later ones reuse the cached blocks
//           (TS_CUDA_NO_CACHING=1: every tensor gets its own cudaMalloc and cudaFree).
//   syncs   lesson2_syncs.cpp. A loop of forwards and a loss, without and with a read of the loss
//           on the host every step (item(), then ts::to(loss, cpu)): the read waits for the GPU,
//           the CPU stops running ahead, and the GPU idles while the CPU launches the next step.
//   timing  lesson3_timing.cpp. One gelu kernel timed eleven ways: its duration in the trace (L2
//           warm and flushed), CUDA events around one call (GPU idle, L2 flushed, L2 warm), around
//           many calls, bench_timing.h's median, the host clock without and with a sync; and the
//           profiler's own cost per op.
// lessons.h holds what they share: the flags, the profile of a step function, the check lines.
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

#include "tutorials/05_memory_and_syncs/lessons.h"
#include "tutorials/tutorial_support.h"

namespace {

using memory_and_syncs::Flags;

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
  if (f.lesson == "memory" || f.lesson == "all") ok &= memory_and_syncs::lesson_memory(f, device);
  if (f.lesson == "syncs" || f.lesson == "all") ok &= memory_and_syncs::lesson_syncs(f, device);
  if (f.lesson == "timing" || f.lesson == "all") ok &= memory_and_syncs::lesson_timing(f, device);
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
