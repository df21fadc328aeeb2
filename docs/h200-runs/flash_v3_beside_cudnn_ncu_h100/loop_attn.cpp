// loop_attn: flash_v3 forwards (nn::CausalSelfAttention) at one shape for a while, back to back,
// so that the GPU's clock and power settle under the load (nvidia-smi samples them meanwhile).
// Usage: loop_attn B H S D causal(0|1) seconds  -> prints forwards, us per forward (sustained)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "nn/attention.h"
#include "ops/ops.h"
#include "tensor/cuda_device.h"

int main(int argc, char** argv) {
  if (argc < 7) return 2;
  const int64_t B = std::atoll(argv[1]), H = std::atoll(argv[2]), S = std::atoll(argv[3]), D = std::atoll(argv[4]);
  const bool causal = std::atoi(argv[5]) != 0;
  const double seconds = std::atof(argv[6]);
  const ts::Options opt{ts::DType::bf16, ts::kCUDA};
  ts::manual_seed(1);
  const ts::Tensor q = ts::randn({B, H, S, D}, opt), k = ts::randn({B, H, S, D}, opt), v = ts::randn({B, H, S, D}, opt);
  const ts::nn::CausalSelfAttention attn(ts::nn::AttentionPath::flash_v3, S, ts::kCUDA, causal);
  ts::Tensor out;
  for (int i = 0; i < 3; ++i) out = attn.forward(q, k, v);
  ts::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  int64_t n = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 8; ++i) out = attn.forward(q, k, v);
    ts::cuda::synchronize();
    n += 8;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double us = elapsed * 1e6 / static_cast<double>(n);
  const double flops = 4.0 * B * H * S * S * D / (causal ? 2 : 1);
  std::printf("flash_v3 B%lldH%lldS%lldD%lld%s: %lld forwards in %.3f s, %.3f us each, %.1f TFLOP/s\n",
              (long long)B, (long long)H, (long long)S, (long long)D, causal ? "" : "_noncausal", (long long)n, elapsed,
              us, flops / (us * 1e-6) / 1e12);
  return 0;
}
