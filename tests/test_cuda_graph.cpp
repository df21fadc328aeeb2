// tests/test_cuda_graph.cpp: ts::cuda::Graph and nn::CapturedStep (tensor/cuda_graph.h).
//
// Replays against float64 references on fresh inputs (part 1's step, the GeGLU MLP, attention),
// the graph's memory (no allocation per replay, fixed addresses, a block the capture freed kept
// while the graph lives), and every refusal: each names the call, abandons the capture, and leaves
// the thread able to run eager ops. Without a GPU the first case checks the refusal a CPU-only
// machine gives; the others say why they did nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/captured_step.h"
#include "nn/geglu_mlp.h"
#include "ops/ops.h"
#include "tensor/cuda_allocator.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"
#include "tests/support/compare.h"
#include "tests/support/error_text.h"

using ts::DType;
using ts::Tensor;
using ts::testing::contains;
using ts::testing::error_of;
namespace cuda = ts::cuda;

namespace {

bool no_gpu() {
  if (cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", cuda::unavailable_reason());
  return true;
}

uint64_t fresh_seed() { return (static_cast<uint64_t>(std::random_device{}()) << 16) ^ std::random_device{}(); }

// add(matmul(x, w), b) in float64 from the tensors' values: x [M, K], w [K, N], b [N].
std::vector<double> step_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t M = x.size(0), K = x.size(1), N = w.size(1);
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += xv[static_cast<size_t>(i * K + k)] * wv[static_cast<size_t>(k * N + j)];
      out[static_cast<size_t>(i * N + j)] = acc + bv[static_cast<size_t>(j)];
    }
  return out;
}

}  // namespace

TEST_CASE("cuda graph: without a usable GPU, a capture is refused with the reason") {
  if (cuda::is_available()) {
    MESSAGE("this machine has a GPU: the cases below capture on it");
    return;
  }
  cuda::Graph graph;
  const std::string begin = error_of([&] { graph.capture_begin(); });
  INFO(begin);
  CHECK(contains(begin, "Graph::capture_begin: "));
  CHECK(contains(begin, cuda::unavailable_reason()));
  CHECK_FALSE(graph.captured());
  CHECK(contains(error_of([&] { graph.replay(); }), "Graph::replay: nothing captured"));
  CHECK(contains(error_of([&] { cuda::GraphCapture capture(graph); }), "Graph::capture_begin: "));
}

TEST_CASE("cuda graph: part 1's step replayed on fresh inputs equals float64, at odd sizes and in two dtypes") {
  if (no_gpu()) return;
  for (const DType dtype : {DType::bf16, DType::f32}) {
    for (const int64_t n : {64, 67, 129}) {
      const uint64_t seed = fresh_seed();
      INFO(ts::dtype_short_name(dtype), " n=", n, " seed=", seed);
      ts::manual_seed(seed);
      const ts::Options on_gpu{dtype, ts::kCUDA};
      Tensor x = ts::randn({n, n + 3}, on_gpu);
      const Tensor w = ts::randn({n + 3, n}, on_gpu), b = ts::randn({n}, on_gpu);
      (void)ts::add(ts::matmul(x, w), b);  // the warm-up: cuBLAS's handle and plans, module loading
      cuda::Graph graph;
      Tensor y;
      {
        cuda::GraphCapture capture(graph);
        y = ts::add(ts::matmul(x, w), b);
      }
      REQUIRE(graph.captured());
      CHECK(graph.node_count() >= 2);  // the GEMM (cuBLAS may use more than one node) and the add
      for (int replay = 0; replay < 3; ++replay) {
        const Tensor next = ts::randn({n, n + 3}, on_gpu);
        ts::copy_(x, next);
        graph.replay();
        CHECK_CLOSE(y.to(ts::kCPU), step_reference(next, w, b), ts::testing::tolerance_for(dtype), seed);
      }
    }
  }
}

TEST_CASE("cuda graph: replays allocate nothing and write the same addresses, and the pool is freed with the graph") {
  if (no_gpu()) return;
  ts::manual_seed(fresh_seed());
  const ts::Options on_gpu{DType::bf16, ts::kCUDA};
  Tensor x = ts::randn({256, 256}, on_gpu);
  const Tensor w = ts::randn({256, 256}, on_gpu), b = ts::randn({256}, on_gpu);
  (void)ts::add(ts::matmul(x, w), b);
  cuda::synchronize();
  const ts::AllocatorStats before = cuda::memory_stats(0);
  {
    cuda::Graph graph;
    Tensor y;
    {
      cuda::GraphCapture capture(graph);
      const Tensor t = ts::matmul(x, w);  // a temporary: freed inside the capture, used by every replay
      y = ts::add(t, b);
    }
    const void* address = y.data_ptr();
    const ts::AllocatorStats captured = cuda::memory_stats(0);
    for (int i = 0; i < 20; ++i) graph.replay();
    cuda::synchronize();
    const ts::AllocatorStats replayed = cuda::memory_stats(0);
    CHECK(replayed.num_allocs == captured.num_allocs);
    CHECK(replayed.allocated == captured.allocated);
    CHECK(replayed.reserved == captured.reserved);
    CHECK(y.data_ptr() == address);
    // The temporary's block stays the graph's: a tensor of its size made now gets other memory.
    const Tensor other = ts::empty({256, 256}, on_gpu);
    CHECK(other.data_ptr() != address);
    CHECK(cuda::memory_stats(0).allocated > before.allocated);
  }
  cuda::synchronize();
  CHECK(cuda::memory_stats(0).allocated == before.allocated);  // y, other and the graph's blocks are gone
}

TEST_CASE("cuda graph: a block freed during the capture that the graph reads is not handed out while it lives") {
  if (no_gpu()) return;
  const ts::Options on_gpu{DType::f32, ts::kCUDA};
  const Tensor b = ts::ones({1024}, on_gpu);
  Tensor a = ts::ones({1024}, on_gpu);
  const void* a_address = a.data_ptr();
  (void)ts::add(a, b);
  cuda::Graph graph;
  Tensor y;
  {
    cuda::GraphCapture capture(graph);
    y = ts::add(a, b);
    a = Tensor();  // the last reference: its block is freed inside the capture
  }
  const Tensor fresh = ts::zeros({1024}, on_gpu);  // the size of a's block, on the default stream
  CHECK(fresh.data_ptr() != a_address);
  graph.replay();
  CHECK(y.to(ts::kCPU).to_vector<double>() == std::vector<double>(1024, 2.0));  // a's ones were still there
}

TEST_CASE("cuda graph: what a capture cannot hold is refused by name, and the thread runs eager ops after") {
  if (no_gpu()) return;
  const ts::Options on_gpu{DType::f32, ts::kCUDA};
  const Tensor x = ts::ones({8}, on_gpu);
  const Tensor host = ts::ones({8});
  (void)ts::add(x, x);
  struct Refusal {
    const char* what;
    std::function<void()> call;
    const char* says;
  };
  const std::vector<Refusal> refusals = {
      {"item", [&] { (void)ts::sum(x, 0).item<float>(); }, "reading a cuda tensor on the host"},
      {"to(cpu)", [&] { (void)x.to(ts::kCPU); }, "copy_ to the CPU"},
      {"to_vector", [&] { (void)x.to_vector<float>(); }, "reading a cuda tensor on the host"},
      {"copy from the CPU", [&] { (void)host.to(ts::kCUDA); }, "copy_ from the CPU"},
      {"synchronize", [] { cuda::synchronize(); }, "synchronize: cannot run while a CUDA graph is being captured"},
      {"synchronize_stream", [] { cuda::synchronize_stream(); }, "synchronize_stream: cannot run while"},
      {"a nested capture", [] { cuda::Graph inner; inner.capture_begin(); }, "graphs do not nest"},
  };
  for (const Refusal& r : refusals) {
    INFO(r.what);
    cuda::Graph graph;
    const std::string message = error_of([&] {
      cuda::GraphCapture capture(graph);
      (void)ts::add(x, x);
      r.call();
    });
    INFO(message);
    CHECK(contains(message, r.says));
    CHECK_FALSE(graph.captured());
    CHECK_FALSE(cuda::is_capturing());
    CHECK(ts::add(x, x).to_vector<float>() == std::vector<float>(8, 2.0f));  // eager again
  }
}

TEST_CASE("cuda graph: misuse of a graph is refused: replay before or during its capture, a second capture") {
  if (no_gpu()) return;
  const Tensor x = ts::ones({8}, {DType::f32, ts::kCUDA});
  (void)ts::add(x, x);
  cuda::Graph graph;
  CHECK(contains(error_of([&] { graph.replay(); }), "Graph::replay: nothing captured"));
  CHECK(contains(error_of([&] { graph.capture_end(); }), "Graph::capture_end: this graph is not being captured"));
  graph.capture_begin();
  (void)ts::add(x, x);
  CHECK(contains(error_of([&] { graph.replay(); }), "the capture is still under way"));
  CHECK(contains(error_of([&] { graph.capture_begin(); }), "is being captured already"));
  graph.capture_end();
  CHECK(contains(error_of([&] { graph.capture_begin(); }), "holds a capture already"));
  graph.replay();
  cuda::synchronize();
  cuda::Graph abandoned;
  abandoned.capture_begin();
  (void)ts::add(x, x);
  abandoned.capture_abort();
  CHECK_FALSE(abandoned.captured());
  CHECK_FALSE(cuda::is_capturing());
}

TEST_CASE("cuda graph: the GeGLU MLP and attention as captured steps equal eager, and another shape is refused") {
  if (no_gpu()) return;
  const uint64_t seed = fresh_seed();
  INFO("seed ", seed);
  ts::manual_seed(seed);
  const ts::Options on_gpu{DType::bf16, ts::kCUDA};
  for (const ts::nn::MlpPath path : {ts::nn::MlpPath::eager, ts::nn::MlpPath::merged}) {
    INFO(ts::nn::mlp_path_name(path));
    const ts::nn::GeGLUMLP mlp(96, 200, path, on_gpu);
    ts::nn::CapturedStep step([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp.forward(in[0])}; },
                              {ts::randn({3, 41, 96}, on_gpu)});
    for (int call = 0; call < 2; ++call) {
      const Tensor x = ts::randn({3, 41, 96}, on_gpu);
      const Tensor eager = mlp.forward(x);
      const Tensor& replayed = step({x})[0];
      CHECK_CLOSE(replayed.to(ts::kCPU), eager.to(ts::kCPU).to_vector<double>(), 0.0, seed);  // the same kernels
    }
    const std::string refused = error_of([&] { (void)step({ts::randn({3, 42, 96}, on_gpu)}); });
    INFO(refused);
    CHECK(contains(refused, "CapturedStep: input 0 is [3, 42, 96] bf16 on cuda:0, but the step was captured for "
                            "[3, 41, 96] bf16 on cuda:0"));
  }
  const ts::nn::CausalSelfAttention attn(ts::nn::AttentionPath::math, 65, ts::kCUDA);
  const auto qkv = [&] { return ts::randn({2, 3, 65, 64}, on_gpu); };
  ts::nn::CapturedStep step(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{attn.forward(in[0], in[1], in[2])}; },
      {qkv(), qkv(), qkv()});
  const Tensor q = qkv(), k = qkv(), v = qkv();
  const Tensor eager = attn.forward(q, k, v);
  CHECK_CLOSE(step({q, k, v})[0].to(ts::kCPU), eager.to(ts::kCPU).to_vector<double>(), 0.0, seed);
}
