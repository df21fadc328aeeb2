// devrun: kernel start minus launch start, per profiled window, over the life of one process.
//   clock_drift MODE SECONDS PERIOD   MODE: idle | busy | late-idle | late-busy
#include <fmt/core.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>
#include "ops/ops.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
namespace prof = ts::profiler;
using clk = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const std::string mode = argv[1];
  const double seconds = std::atof(argv[2]), period = std::atof(argv[3]);
  const ts::Options o{ts::DType::bf16, ts::kCUDA};
  const ts::Tensor a = ts::randn({1}, o), b = ts::randn({1}, o), x = ts::randn({4096, 4096}, o);
  ts::cuda::synchronize();
  const auto t0 = clk::now();
  const auto since = [&] { return std::chrono::duration<double>(clk::now() - t0).count(); };
  const auto wait = [&](double s) {
    const auto until = clk::now() + std::chrono::duration<double>(s);
    if (mode.find("busy") != std::string::npos) {
      while (clk::now() < until) { for (int i = 0; i < 20; ++i) ts::mm(x, x); ts::cuda::synchronize(); }
    } else {
      std::this_thread::sleep_until(until);
    }
  };
  const auto window = [&] {
    prof::ProfilerConfig config;
    config.activities = {prof::Activity::CPU, prof::Activity::CUDA};
    prof::Profiler p(config);
    p.start();
    for (int i = 0; i < 2000; ++i) ts::add(a, b);
    p.stop();
    const prof::Recording& r = p.recording();
    std::map<uint64_t, int64_t> launch;
    for (const prof::Event& e : r.events)
      if (e.kind == prof::EventKind::cuda_runtime || e.kind == prof::EventKind::cuda_driver) launch[e.correlation] = e.start_ns;
    std::vector<int64_t> d;
    for (const prof::Event& e : r.events)
      if (e.kind == prof::EventKind::kernel && launch.contains(e.correlation)) d.push_back(e.start_ns - launch[e.correlation]);
    std::sort(d.begin(), d.end());
    fmt::print("{} t={:6.1f}s kernels={} min={} median={} violations={} clock='{}'\n", mode, since(), d.size(),
               d.empty() ? 0 : d.front(), d.empty() ? 0 : d[d.size() / 2], r.device_activity.launch_order_violations,
               r.device_activity.clock);
    std::fflush(stdout);
  };
  if (mode.rfind("late", 0) == 0) wait(seconds);
  window();
  while (since() < seconds) { wait(period); window(); }
}
