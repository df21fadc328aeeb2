// examples/profile_three_ops/main.cpp: tensorscope in a program of your own.
//
// Three ops under the profiler (a matmul, an add, a gelu), on the GPU when there is one, the
// table printed as the tutorials print it, the Chrome trace written (open it in
// https://ui.perfetto.dev, or draw it with ts_trace_svg).
//
//   profile_three_ops [TRACE.json] [--device cpu|cuda]     (default: three_ops.json, cuda if present)
//
// Built against an installed tensorscope by this folder's CMakeLists.txt (find_package), or in
// one line with pkg-config: see README.md, "Use it in your own project".
#include <fmt/core.h>

#include <cstring>
#include <exception>
#include <string>

#include "ops/ops.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"

int main(int argc, char** argv) {
  std::string trace_path = "three_ops.json";
  ts::Device device = ts::cuda::is_available() ? ts::kCUDA : ts::kCPU;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      const std::string name = argv[++i];
      if (name != "cpu" && name != "cuda") {
        fmt::print(stderr, "profile_three_ops: --device {}: expected cpu or cuda\n", name);
        return 2;
      }
      device = name == "cuda" ? ts::kCUDA : ts::kCPU;
    } else {
      trace_path = argv[i];
    }
  }
  try {
    namespace prof = ts::profiler;
    std::vector<prof::Activity> activities{prof::Activity::CPU};
    if (device.is_cuda()) activities.push_back(prof::Activity::CUDA);
    const ts::Options options(device.is_cuda() ? ts::DType::bf16 : ts::DType::f32, device);

    ts::manual_seed(0);
    const ts::Tensor x = ts::randn({256, 512}, options);
    const ts::Tensor w = ts::randn({512, 256}, options);
    const ts::Tensor b = ts::randn({256}, options);

    // Once unprofiled first: a process's first call of an op pays one-time costs (the thread
    // pool, the GPU's context and modules) that the profile should not mix with the op's own.
    ts::gelu(ts::add(ts::matmul(x, w), b));

    prof::Profiler profiler({.activities = activities, .record_shapes = true});
    {
      prof::ProfilerGuard recording(profiler);
      const ts::Tensor y = ts::gelu(ts::add(ts::matmul(x, w), b));
    }  // stop(): waits for the GPU, then collects its records
    fmt::print("{}", profiler.key_averages().table({.sort_by = "cpu_time_total", .row_limit = 10}));
    profiler.export_chrome_trace(trace_path);
    fmt::print("wrote {}\n", trace_path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "profile_three_ops: {}\n", e.what());
    return 1;
  }
  return 0;
}
