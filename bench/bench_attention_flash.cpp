// bench/bench_attention_flash.cpp: the flash attention rungs timed through their typed launchers.
//
//   ts_bench_attention                       the ladder (math, flash_v1, flash_v2) on the three target shapes
//   ts_bench_attention --rung flash_v2 --repeats 51 --json out.jsonl
//   python3 bench/torch_attention_flash.py   PyTorch's flash and cuDNN SDPA on the same shapes
//
// Device time per call as ts_bench measures it: CUDA events around one call, each call after a
// 256 MiB memset (the H200's 50 MiB L2 emptied, the GPU busy while the call is issued), warm-up
// first, then the median. FLOPs count the two products, 4*B*H*S*L*D, halved with causal (the
// convention of FlashAttention's and PyTorch's benchmarks). `math` is rung 0, the composite
// ts::scaled_dot_product_attention runs today (matmul, mul, masked_fill, _safe_softmax, matmul:
// several kernels, the [B, H, S, S] scores in memory between them). Before timing, the rungs run
// on the same inputs and their relative L2 difference to math is printed (each flash rung is
// tested against float64 in tests/test_cuda_attention_flash.cpp).
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "ops/attention/attention_flash.h"
#include "ops/ops.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_device.h"

namespace {

// Median device time (ms) of fn: `warmup` untimed calls, then `repeats` calls each after the flush.
double median_device_ms(const std::function<void()>& fn, int warmup, int repeats) {
  constexpr size_t kFlushBytes = size_t{256} << 20;
  static const ts::Tensor* flush =  // leaked: freeing device memory during exit can outlive the CUDA runtime
      new ts::Tensor(ts::empty({static_cast<int64_t>(kFlushBytes)}, {ts::DType::b8, ts::kCUDA}));
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t start, stop;
  TS_CUDA_CHECK(cudaEventCreate(&start));
  TS_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    TS_CUDA_CHECK(cudaMemsetAsync(flush->data_ptr(), r & 0xff, kFlushBytes, ts::cuda::current_stream()));
    TS_CUDA_CHECK(cudaEventRecord(start, ts::cuda::current_stream()));
    fn();
    TS_CUDA_CHECK(cudaEventRecord(stop, ts::cuda::current_stream()));
    TS_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    TS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms);
  }
  TS_CUDA_CHECK(cudaEventDestroy(start));
  TS_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(samples.begin(), samples.begin() + repeats / 2, samples.end());
  return samples[static_cast<size_t>(repeats / 2)];
}

struct Workload {
  int64_t B, H, S, D;
  bool causal;
  std::string name() const {
    return fmt::format("B{}_H{}_S{}_D{}{}", B, H, S, D, causal ? "_causal" : "");
  }
  double flops() const { return 4.0 * B * H * S * S * D / (causal ? 2 : 1); }
};

double rel_l2(const ts::Tensor& a, const ts::Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    d2 += (x[i] - y[i]) * (x[i] - y[i]);
    r2 += y[i] * y[i];
  }
  return std::sqrt(d2 / r2);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ts_bench_attention: device time of the attention ladder on the target shapes"};
  std::string rung = "all", json_path;
  int repeats = 21;
  app.add_option("--rung", rung, "math, flash_v1, flash_v2 or all");
  app.add_option("--repeats", repeats, "timed calls per entry (the median is reported)");
  app.add_option("--json", json_path, "also write one JSON object per line to this file");
  CLI11_PARSE(app, argc, argv);
  if (!ts::cuda::is_available()) {
    fmt::print("ts_bench_attention: skipped: {}\n", ts::cuda::unavailable_reason());
    return 0;
  }
  std::FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");

  const std::vector<Workload> workloads = {{4, 16, 4096, 64, true}, {2, 16, 4096, 128, true}, {4, 16, 1024, 64, true}};
  fmt::print("{}, bf16, [B, H, S, D] contiguous, median of {} calls\n", ts::cuda::device_properties().name, repeats);
  fmt::print("{:<36} {:>10} {:>10}\n", "entry", "us", "TFLOP/s");
  for (const Workload& w : workloads) {
    ts::manual_seed(1);
    const ts::Options opt{ts::DType::bf16, ts::kCUDA};
    const ts::Tensor q = ts::randn({w.B, w.H, w.S, w.D}, opt), k = ts::randn({w.B, w.H, w.S, w.D}, opt),
                     v = ts::randn({w.B, w.H, w.S, w.D}, opt);
    ts::Tensor out_math, out1 = ts::empty(q.shape(), opt), out2 = ts::empty(q.shape(), opt);
    const ts::SdpaAttrs attrs{w.causal, 0};
    struct Rung {
      const char* name;
      std::function<void()> run;
    };
    const Rung rungs[] = {
        {"math", [&] { out_math = ts::scaled_dot_product_attention(q, k, v, {}, w.causal); }},
        {"flash_v1", [&] { ts::sdpa_cuda_flash_v1(q, k, v, attrs, out1); }},
        {"flash_v2", [&] { ts::sdpa_cuda_flash_v2(q, k, v, attrs, out2); }}};
    if (rung == "all") {
      for (const Rung& r : rungs) r.run();
      ts::cuda::check_launch("flash attention");
      fmt::print("{:<36} rel L2 difference to math: flash_v1 {:.2e}, flash_v2 {:.2e}\n", w.name(),
                 rel_l2(out1, out_math), rel_l2(out2, out_math));
    }
    for (const Rung& r : rungs) {
      if (rung != "all" && rung != r.name) continue;
      const double ms = median_device_ms(r.run, 3, repeats);
      ts::cuda::check_launch(r.name);
      const std::string name = fmt::format("attn/{}/bf16/{}", r.name, w.name());
      const double tflops = w.flops() / (ms * 1e-3) / 1e12;
      fmt::print("{:<36} {:>10.1f} {:>10.1f}\n", name, ms * 1e3, tflops);
      if (json) {
        fmt::print(json, "{{\"name\": \"{}\", \"value\": {:.6g}, \"unit\": \"us\"}}\n", name, ms * 1e3);
        fmt::print(json, "{{\"name\": \"{}\", \"value\": {:.6g}, \"unit\": \"TFLOP/s\"}}\n", name, tflops);
      }
    }
  }
  if (json) std::fclose(json);
  return 0;
}
