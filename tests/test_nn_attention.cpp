// tests/test_nn_attention.cpp: nn/attention.h's six paths (naive, inplace, math, flash_v1,
// flash_v2, flash_v3) against a float64 reference written here, and what each path launches.
//
// Inputs are made on the CPU (standard normal values rounded to the dtype) and, for the GPU
// cases, copied over, so the reference sees exactly what the path saw. Shapes are odd on
// purpose: S = 1, 7, 65; L != S both ways; head dims 64, 128 and an odd one (33; flash_v2 takes
// 64, 96 and 128, flash_v3 those and 192 and 256); causal and not; bf16, f16, f32 (the fused paths take bf16 and
// f16). Seeds are fresh on every run (TS_TEST_SEED=N repeats one) and printed with any failure.
//
// On the CPU: naive, inplace and math; NaN propagation; the safe softmax of the math rung; the
// ops the math rung shows in a profile; the fused paths' refusal. On a GPU (skipped without
// one): every path including the fused ones, and the kernels and copies a profiled forward
// launches per op against nn::expected_launches. flash_v3 runs on a compute capability 9.0 GPU
// only: on another GPU each case says it skipped flash_v3 and why, and checks that the path
// refuses with that reason.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "ops/dispatch.h"
#include "ops/registry.h"
#include "ops/ops.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"
#include "tests/support/compare.h"
#ifdef TS_SOURCE_DIR
#include "tests/support/quote_check.h"
#endif

using ts::DType;
using ts::Tensor;
using ts::nn::AttentionPath;
namespace prof = ts::profiler;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool no_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

// A new seed per test run (printed on failure), or TS_TEST_SEED to repeat one.
uint64_t fresh_seed() {
  if (const char* env = std::getenv("TS_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  return (static_cast<uint64_t>(std::random_device{}()) << 16) ^ std::random_device{}();
}

struct Case {
  int64_t B, H, S, L, D;
  bool causal;
};

// The sweep: S = 1, 7, 65; L == S and L != S both ways; D 64, 128 and 33; causal and not.
std::vector<Case> sweep() {
  std::vector<Case> cases;
  const int64_t seqs[][2] = {{1, 1}, {7, 7}, {65, 65}, {7, 65}, {65, 7}, {1, 65}};
  for (const auto& sl : seqs)
    for (int64_t D : {64, 128, 33})
      for (bool causal : {true, false}) cases.push_back({2, 3, sl[0], sl[1], D, causal});
  return cases;
}

// softmax(q k^T / sqrt(D), causal: key j visible to query i when j <= i) v, in double, from the
// definition, over [B, H, seq, D] row-major values. A row with a NaN among its visible scores is NaN.
std::vector<double> reference(const Tensor& q_cpu, const Tensor& k_cpu, const Tensor& v_cpu, bool causal) {
  const int64_t BH = q_cpu.size(0) * q_cpu.size(1), S = q_cpu.size(2), D = q_cpu.size(3), L = k_cpu.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const std::vector<double> q = q_cpu.to_vector<double>(), k = k_cpu.to_vector<double>(), v = v_cpu.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(BH * S * D), 0.0), s(static_cast<size_t>(L));
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t i = 0; i < S; ++i) {
      const double* qi = &q[static_cast<size_t>((bh * S + i) * D)];
      double* oi = &out[static_cast<size_t>((bh * S + i) * D)];
      const int64_t visible = causal ? std::min(L, i + 1) : L;
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qi[d] * k[static_cast<size_t>((bh * L + j) * D + d)];
        s[static_cast<size_t>(j)] = scale * dot;
        nan |= std::isnan(dot);
        m = std::max(m, s[static_cast<size_t>(j)]);
      }
      if (nan) {
        for (int64_t d = 0; d < D; ++d) oi[d] = kNaN;
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < visible; ++j) {
        const double p = std::exp(s[static_cast<size_t>(j)] - m);
        sum += p;
        for (int64_t d = 0; d < D; ++d) oi[d] += p * v[static_cast<size_t>((bh * L + j) * D + d)];
      }
      for (int64_t d = 0; d < D; ++d) oi[d] /= sum;
    }
  return out;
}

struct Qkv {
  Tensor q, k, v;  // on the CPU
};

Qkv make_qkv(const Case& c, DType dtype, uint64_t seed) {
  ts::manual_seed(seed);
  return {ts::randn({c.B, c.H, c.S, c.D}, dtype), ts::randn({c.B, c.H, c.L, c.D}, dtype),
          ts::randn({c.B, c.H, c.L, c.D}, dtype)};
}

// One element of x (CPU) set to NaN: flat index `at`.
Tensor with_nan(const Tensor& x, int64_t at) {
  std::vector<double> values = x.to_vector<double>();
  values[static_cast<size_t>(at)] = kNaN;
  return ts::from_vector(values, x.shape(), x.dtype());
}

// The magnitude of the terms of each output element: sum_j p_ij |v_jd|, the reference with |v|.
std::vector<double> terms_magnitude(const Tensor& q_cpu, const Tensor& k_cpu, const Tensor& v_cpu, bool causal) {
  std::vector<double> v = v_cpu.to_vector<double>();
  for (double& x : v) x = std::fabs(x);
  return reference(q_cpu, k_cpu, ts::from_vector(v, v_cpu.shape(), DType::f32), causal);
}

// Bounds: tests/support/compare.h's, per dtype, for every path. The naive and inplace paths also
// round the scores, the scaled scores and the probabilities to the input dtype before the second
// product: each probability is off by up to a few parts in 2^8 in bf16, and where the output is an
// average of many values that cancel (one query over 65 keys) those errors are large beside it: the
// relative L2 error reached 1.1e-2 in 1,440 seeded bf16 cases on the CPU (S 1, L 65, D 33), while
// measured against the magnitude of the terms (CHECK_CLOSE_TO_TERMS) it stayed under 2.8e-3. Those two
// paths are held to that measure, the others to the relative L2 error.

std::string describe(AttentionPath path, DType dtype, const Case& c, uint64_t seed) {
  return fmt::format("path {} {} B={} H={} S={} L={} D={} causal={} seed={}", ts::nn::attention_path_name(path),
                     ts::dtype_short_name(dtype), c.B, c.H, c.S, c.L, c.D, c.causal, seed);
}

// Runs `path` through the layer on `device` and compares with the reference.
void check_path(AttentionPath path, DType dtype, const Case& c, uint64_t seed, ts::Device device) {
  INFO(describe(path, dtype, c, seed));
  const Qkv x = make_qkv(c, dtype, seed);
  const std::vector<double> want = reference(x.q, x.k, x.v, c.causal);
  const ts::nn::CausalSelfAttention attn(path, std::max(c.S, c.L), device, c.causal);
  const Tensor out = attn.forward(x.q.to(device), x.k.to(device), x.v.to(device));
  CHECK(out.shape() == x.q.shape());
  CHECK(out.dtype() == dtype);
  CHECK(out.device() == device);
  if (path == AttentionPath::naive || path == AttentionPath::inplace)
    CHECK_CLOSE_TO_TERMS(out.to(ts::kCPU), want, terms_magnitude(x.q, x.k, x.v, c.causal),
                         ts::testing::tolerance_for(dtype), seed);
  else
    CHECK_CLOSE(out.to(ts::kCPU), want, ts::testing::tolerance_for(dtype), seed);
}

constexpr AttentionPath kUnfused[] = {AttentionPath::naive, AttentionPath::inplace, AttentionPath::math};
constexpr DType kDTypes[] = {DType::bf16, DType::f16, DType::f32};

// Why cuda:0 (where the cases make their tensors) lacks what a fused path's rung needs (its rung
// row: flash_v2 8.0, flash_v3 9.0 alone), or "" when it has it.
std::string gpu_refusal(AttentionPath path) {
  const char* name = ts::nn::attention_variant_name(path);
  if (name == nullptr) return {};
  std::string why;
  return ts::gpu_meets_rung(name, ts::kCUDA, &why) ? std::string() : why;
}

// Every path a GPU case runs: a fused path only where the GPU has what its rung needs; a path
// left out is said, with why.
std::vector<AttentionPath> gpu_paths() {
  std::vector<AttentionPath> paths;
  for (AttentionPath path : {AttentionPath::naive, AttentionPath::inplace, AttentionPath::math,
                             AttentionPath::flash_v1, AttentionPath::flash_v2, AttentionPath::flash_v3}) {
    if (const std::string why = gpu_refusal(path); !why.empty())
      MESSAGE(std::string(ts::nn::attention_path_name(path)), " skipped: ", why);
    else
      paths.push_back(path);
  }
  return paths;
}

// The paths that can run (path, dtype, D) on a GPU: the fused ones take bf16/f16; flash_v1 D up
// to 128, flash_v2 64, 96 or 128, flash_v3 those and 192 or 256.
bool runs_on_gpu(AttentionPath path, DType dtype, int64_t D) {
  if (!ts::nn::is_fused(path)) return true;
  if (dtype == DType::f32) return false;
  if (path == AttentionPath::flash_v1) return D <= 128;
  if (path == AttentionPath::flash_v2) return D == 64 || D == 96 || D == 128;
  return D == 64 || D == 96 || D == 128 || D == 192 || D == 256;
}

// What a profiled forward launched on the GPU, per op: kernels, copies.
struct Launched {
  std::map<std::string, int> kernels, memcpys;
  std::vector<std::string> memcpy_names;
};

Launched launched_by_op(const prof::Recording& r) {
  std::map<uint64_t, std::string> op_of_id;
  for (const prof::Event& e : r.events)
    if (e.kind == prof::EventKind::cpu_op) op_of_id[e.id] = std::string(e.name);
  Launched l;
  for (const prof::Event& e : r.events) {
    const auto it = op_of_id.find(e.id);
    const std::string op = it == op_of_id.end() ? "(no op)" : it->second;
    if (e.kind == prof::EventKind::kernel) ++l.kernels[op];
    if (e.kind == prof::EventKind::memcpy) {
      ++l.memcpys[op];
      l.memcpy_names.emplace_back(e.name);
    }
  }
  return l;
}

// Names of the ops one CPU forward records, with their counts.
std::map<std::string, int> ops_of_forward(const ts::nn::CausalSelfAttention& attn, const Qkv& x) {
  prof::Profiler p;
  p.start();
  attn.forward(x.q, x.k, x.v);
  p.stop();
  std::map<std::string, int> n;
  for (const prof::Event& e : p.events())
    if (e.kind == prof::EventKind::cpu_op) ++n[std::string(e.name)];
  return n;
}

}  // namespace

// ---- on the CPU ----------------------------------------------------------------------------------

TEST_CASE("nn attention: naive, inplace and math against float64 on the cpu: odd shapes, L != S, causal, dtypes") {
  const uint64_t base = fresh_seed();
  MESSAGE("seed base ", base);
  uint64_t seed = base;
  for (AttentionPath path : kUnfused)
    for (DType dtype : kDTypes)
      for (const Case& c : sweep()) check_path(path, dtype, c, ++seed, ts::kCPU);
}

// The terms' measure is weaker than the relative L2 error only by the cancellation it forgives:
// an output off by 2% of its terms' magnitude still fails it, and a NaN still fails.
TEST_CASE("nn attention: the terms' measure of the rounding paths fails a wrong output") {
  const Case c{1, 2, 1, 65, 33, false};
  const Qkv x = make_qkv(c, DType::f32, 7);
  const std::vector<double> want = reference(x.q, x.k, x.v, c.causal);
  const std::vector<double> terms = terms_magnitude(x.q, x.k, x.v, c.causal);
  double terms2 = 0;
  for (double t : terms) terms2 += t * t;
  std::vector<double> off = want;
  off[5] += 0.02 * std::sqrt(terms2);
  const auto as_tensor = [&](const std::vector<double>& v) { return ts::from_vector(v, x.q.shape(), DType::f32); };
  CHECK(ts::testing::compare(as_tensor(want), want, 1e-2, 7, terms).ok);
  CHECK_FALSE(ts::testing::compare(as_tensor(off), want, 1e-2, 7, terms).ok);
  off = want;
  off[5] = kNaN;
  CHECK_FALSE(ts::testing::compare(as_tensor(off), want, 1e-2, 7, terms).ok);
  CHECK_FALSE(ts::testing::compare(as_tensor(want), want, 1e-2, 7, std::vector<double>(3, 1.0)).ok);  // sizes
}

TEST_CASE("nn attention: paths by name, and the fused paths refuse a cpu call with the rung's reason") {
  for (const char* name : {"naive", "inplace", "math", "flash_v1", "flash_v2", "flash_v3"})
    CHECK(std::string(ts::nn::attention_path_name(ts::nn::parse_attention_path(name))) == name);
  CHECK(std::string(ts::nn::attention_variant_name(AttentionPath::flash_v3)) ==
        "scaled_dot_product_attention/cuda/flash_v3");
  CHECK(ts::nn::is_fused(AttentionPath::flash_v3));
  CHECK_THROWS_WITH_AS(ts::nn::parse_attention_path("flash"), doctest::Contains("expected naive, inplace, math"),
                       ts::Error);
  const Qkv x = make_qkv({1, 2, 9, 9, 64, true}, DType::bf16, 1);
  CHECK(ts::nn::attention_path_refusal(AttentionPath::math, x.q, x.k, x.v, true).empty());
  if (!ts::cuda::built_with_cuda()) {
    // No CUDA rung in this build: each fused path says so, and the layer throws it.
    for (AttentionPath path : {AttentionPath::flash_v1, AttentionPath::flash_v2, AttentionPath::flash_v3}) {
      INFO(ts::nn::attention_path_name(path));
      CHECK(ts::find_variant(ts::nn::attention_variant_name(path)) == nullptr);
      CHECK(ts::nn::attention_path_refusal(path, x.q, x.k, x.v, true).find("is not in this build") != std::string::npos);
      const ts::nn::CausalSelfAttention attn(path, 9, ts::kCPU);
      CHECK_THROWS_WITH_AS(attn.forward(x.q, x.k, x.v), doctest::Contains("no CUDA backend"), ts::Error);
    }
  } else {
    CHECK(ts::find_variant(ts::nn::attention_variant_name(AttentionPath::flash_v3)) != nullptr);  // registered
    for (AttentionPath path : {AttentionPath::flash_v1, AttentionPath::flash_v2, AttentionPath::flash_v3}) {
      INFO(ts::nn::attention_path_name(path));
      CHECK(ts::nn::attention_path_refusal(path, x.q, x.k, x.v, true).find("runs on cuda, q is on cpu") !=
            std::string::npos);
      // Dispatch throws it: the forced rung, both devices, then the rung's own words.
      const ts::nn::CausalSelfAttention attn(path, 9, ts::kCPU);
      CHECK_THROWS_WITH_AS(attn.forward(x.q, x.k, x.v),
                           doctest::Contains(fmt::format("variant {} (chosen by VariantOverride) runs on cuda, this "
                                                         "call on cpu: sdpa {}: runs on cuda, q is on cpu",
                                                         ts::nn::attention_variant_name(path),
                                                         ts::nn::attention_path_name(path))
                                                 .c_str()),
                           ts::Error);
    }
    // flash_v3's own reasons, before the device's: a head dim it lacks, f32.
    const Qkv d80 = make_qkv({1, 2, 9, 9, 80, true}, DType::bf16, 1);
    CHECK(ts::nn::attention_path_refusal(AttentionPath::flash_v3, d80.q, d80.k, d80.v, true).find("head dim 80") !=
          std::string::npos);
    const Qkv f32 = make_qkv({1, 2, 9, 9, 64, true}, DType::f32, 1);
    CHECK(ts::nn::attention_path_refusal(AttentionPath::flash_v3, f32.q, f32.k, f32.v, true).find("dtype f32") !=
          std::string::npos);
    // The layer throws the same reason, once, from dispatch.
    const ts::nn::CausalSelfAttention v3(AttentionPath::flash_v3, 9, ts::kCPU);
    CHECK_THROWS_WITH_AS(v3.forward(d80.q, d80.k, d80.v), doctest::Contains("head dim 80"), ts::Error);
  }
  // A sequence longer than the mask was built for is the caller's mistake, said clearly.
  const ts::nn::CausalSelfAttention small(AttentionPath::naive, 4, ts::kCPU);
  CHECK_THROWS_WITH_AS(small.forward(x.q, x.k, x.v), doctest::Contains("exceed max_seq=4"), ts::Error);
}

TEST_CASE("nn attention: a NaN in q poisons its row only, and a NaN in k the rows that see that key (cpu)") {
  const uint64_t base = fresh_seed();
  uint64_t seed = base;
  for (AttentionPath path : kUnfused)
    for (DType dtype : kDTypes)
      for (bool causal : {true, false}) {
        const Case c{1, 2, 7, 7, 5, causal};
        INFO(describe(path, dtype, c, seed + 1));
        Qkv x = make_qkv(c, dtype, ++seed);
        x.q = with_nan(x.q, (1 * 7 + 3) * 5 + 2);  // head 1, query 3
        x.k = with_nan(x.k, (0 * 7 + 4) * 5 + 1);  // head 0, key 4: causal, queries 4..6 see it
        const std::vector<double> want = reference(x.q, x.k, x.v, causal);
        int nan_rows = 0;
        for (size_t r = 0; r < want.size() / 5; ++r) nan_rows += std::isnan(want[r * 5]);
        CHECK(nan_rows == (causal ? 1 + 3 : 1 + 7));  // the reference itself: the rows we mean
        const ts::nn::CausalSelfAttention attn(path, 7, ts::kCPU, causal);
        CHECK_CLOSE(attn.forward(x.q, x.k, x.v), want, ts::testing::tolerance_for(dtype), seed);  // NaN exactly where want has it
      }
}

TEST_CASE("nn attention: the math rung gives 0, not NaN, for a query whose keys are all masked (cpu)") {
  const uint64_t seed = fresh_seed();
  for (DType dtype : kDTypes) {
    INFO(ts::dtype_short_name(dtype), " seed ", seed);
    const Qkv x = make_qkv({2, 3, 7, 9, 5, false}, dtype, seed);
    // true = attend; query 2 attends to nothing, every other query to keys 0..5.
    std::vector<int64_t> bits(7 * 9, 0);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 9; ++j) bits[static_cast<size_t>(i * 9 + j)] = i != 2 && j <= 5;
    const Tensor mask = ts::from_vector(bits, {7, 9}, DType::b8);
    Tensor out;
    {
      ts::VariantOverride use("scaled_dot_product_attention/any/math");
      out = ts::scaled_dot_product_attention(x.q, x.k, x.v, mask);
    }
    CHECK(out.dtype() == dtype);
    // The reference: keys 0..5 for every query but 2, whose row is 0.
    const std::vector<double> want_visible =
        reference(x.q, ts::narrow(x.k, 2, 0, 6), ts::narrow(x.v, 2, 0, 6), /*causal=*/false);
    std::vector<double> want = want_visible;
    for (int64_t bh = 0; bh < 6; ++bh)
      for (int64_t d = 0; d < 5; ++d) want[static_cast<size_t>((bh * 7 + 2) * 5 + d)] = 0;
    CHECK_CLOSE(out, want, ts::testing::tolerance_for(dtype), seed);
    const std::vector<double> got = out.to_vector<double>();
    for (int64_t bh = 0; bh < 6; ++bh)
      for (int64_t d = 0; d < 5; ++d) CHECK(got[static_cast<size_t>((bh * 7 + 2) * 5 + d)] == 0.0);
  }
}

TEST_CASE("nn attention: the ops each path shows in a profile (cpu): the copy, the casts, the mask") {
  const Qkv bf = make_qkv({1, 2, 8, 8, 4, true}, DType::bf16, 3);
  const Qkv f32 = make_qkv({1, 2, 8, 8, 4, true}, DType::f32, 3);
  // naive: masked_fill out of place = clone + masked_fill_, the clone a copy_.
  const auto naive = ops_of_forward(ts::nn::CausalSelfAttention(AttentionPath::naive, 8, ts::kCPU), bf);
  CHECK(naive.at("ts::masked_fill") == 1);
  CHECK(naive.at("ts::clone") == 1);
  CHECK(naive.at("ts::copy_") == 1);
  CHECK(naive.at("ts::masked_fill_") == 1);
  CHECK(naive.at("ts::softmax") == 1);
  CHECK(naive.count("ts::triu") == 0);  // the mask was built at construction
  // inplace: the fill where the scores are, no clone, no copy.
  const auto inplace = ops_of_forward(ts::nn::CausalSelfAttention(AttentionPath::inplace, 8, ts::kCPU), bf);
  CHECK(inplace.at("ts::masked_fill_") == 1);
  CHECK(inplace.count("ts::masked_fill") == 0);
  CHECK(inplace.count("ts::clone") == 0);
  CHECK(inplace.count("ts::copy_") == 0);
  // math on bf16: 3 casts in, 1 out (ts::to -> ts::copy_), the mask rebuilt (ones -> fill_, triu),
  // q and k scaled, the safe softmax.
  const auto math = ops_of_forward(ts::nn::CausalSelfAttention(AttentionPath::math, 8, ts::kCPU), bf);
  CHECK(math.at("ts::scaled_dot_product_attention") == 1);
  CHECK(math.at("ts::to") == 4);
  CHECK(math.at("ts::copy_") == 4);
  CHECK(math.at("ts::fill_") == 1);
  CHECK(math.at("ts::triu") == 1);
  CHECK(math.at("ts::masked_fill_") == 1);
  CHECK(math.at("ts::mul") == 2);
  CHECK(math.at("ts::bmm") == 2);
  CHECK(math.at("ts::_safe_softmax") == 1);
  CHECK(math.count("ts::softmax") == 0);
  // math on f32: no casts.
  const auto math32 = ops_of_forward(ts::nn::CausalSelfAttention(AttentionPath::math, 8, ts::kCPU), f32);
  CHECK(math32.count("ts::to") == 0);
  CHECK(math32.count("ts::copy_") == 0);
  CHECK(math32.at("ts::triu") == 1);
  // The expectations the tutorial prints and counts against.
  using ts::nn::expected_kernels, ts::nn::expected_memcpys;
  CHECK(expected_kernels(AttentionPath::naive, true, DType::bf16) == 5);
  CHECK(expected_memcpys(AttentionPath::naive, true, DType::bf16) == 1);
  CHECK(expected_kernels(AttentionPath::inplace, true, DType::bf16) == 5);
  CHECK(expected_memcpys(AttentionPath::inplace, true, DType::bf16) == 0);
  CHECK(expected_kernels(AttentionPath::naive, false, DType::bf16) == 4);
  CHECK(expected_memcpys(AttentionPath::naive, false, DType::bf16) == 0);
  CHECK(expected_kernels(AttentionPath::math, true, DType::bf16) == 12);
  CHECK(expected_kernels(AttentionPath::math, true, DType::f32) == 8);
  CHECK(expected_kernels(AttentionPath::math, false, DType::f16) == 9);
  CHECK(expected_kernels(AttentionPath::flash_v1, true, DType::bf16) == 1);
  CHECK(expected_kernels(AttentionPath::flash_v2, false, DType::f16) == 1);
  CHECK(expected_kernels(AttentionPath::flash_v3, true, DType::bf16) == 1);
  CHECK(expected_memcpys(AttentionPath::flash_v3, true, DType::bf16) == 0);
  CHECK(ts::nn::expected_launches(AttentionPath::flash_v3, false, DType::f16).front().op ==
        std::string("ts::scaled_dot_product_attention"));
}

// ---- on the GPU ------------------------------------------------------------------------------------

TEST_CASE("cuda: nn attention: every path against float64 on the gpu: odd shapes, L != S, causal, dtypes") {
  if (no_gpu()) return;
  const uint64_t base = fresh_seed();
  MESSAGE("seed base ", base);
  uint64_t seed = base;
  for (AttentionPath path : gpu_paths())
    for (DType dtype : kDTypes)
      for (const Case& c : sweep()) {
        ++seed;
        if (runs_on_gpu(path, dtype, c.D)) check_path(path, dtype, c, seed, ts::kCUDA);
      }
}

TEST_CASE("cuda: nn attention: NaN propagation and the math rung's fully masked row, on the gpu") {
  if (no_gpu()) return;
  const uint64_t base = fresh_seed();
  uint64_t seed = base;
  for (AttentionPath path : gpu_paths())
    for (DType dtype : kDTypes)
      for (bool causal : {true, false}) {
        const Case c{1, 2, 7, 7, 64, causal};
        if (!runs_on_gpu(path, dtype, c.D)) continue;
        INFO(describe(path, dtype, c, seed + 1));
        Qkv x = make_qkv(c, dtype, ++seed);
        x.q = with_nan(x.q, (1 * 7 + 3) * 64 + 2);  // head 1, query 3: that row only
        const std::vector<double> want = reference(x.q, x.k, x.v, causal);
        const ts::nn::CausalSelfAttention attn(path, 7, ts::kCUDA, causal);
        const Tensor out = attn.forward(x.q.to(ts::kCUDA), x.k.to(ts::kCUDA), x.v.to(ts::kCUDA));
        CHECK_CLOSE(out.to(ts::kCPU), want, ts::testing::tolerance_for(dtype), seed);
      }
  for (DType dtype : kDTypes) {
    INFO(ts::dtype_short_name(dtype), " seed ", seed);
    const Qkv x = make_qkv({2, 3, 7, 9, 5, false}, dtype, ++seed);
    std::vector<int64_t> bits(7 * 9, 0);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 9; ++j) bits[static_cast<size_t>(i * 9 + j)] = i != 2 && j <= 5;
    const Tensor mask = ts::from_vector(bits, {7, 9}, {DType::b8, ts::kCUDA});
    Tensor out;
    {
      ts::VariantOverride use("scaled_dot_product_attention/any/math");
      out = ts::scaled_dot_product_attention(x.q.to(ts::kCUDA), x.k.to(ts::kCUDA), x.v.to(ts::kCUDA), mask);
    }
    std::vector<double> want = reference(x.q, ts::narrow(x.k, 2, 0, 6), ts::narrow(x.v, 2, 0, 6), false);
    for (int64_t bh = 0; bh < 6; ++bh)
      for (int64_t d = 0; d < 5; ++d) want[static_cast<size_t>((bh * 7 + 2) * 5 + d)] = 0;
    CHECK_CLOSE(out.to(ts::kCPU), want, ts::testing::tolerance_for(dtype), seed);
  }
}

TEST_CASE("cuda: nn attention: a fused path on a GPU without what its rung needs refuses, with the reason") {
  if (no_gpu()) return;
  const Qkv cpu = make_qkv({1, 2, 9, 9, 64, true}, DType::bf16, 1);
  const Qkv x{cpu.q.to(ts::kCUDA), cpu.k.to(ts::kCUDA), cpu.v.to(ts::kCUDA)};
  int refused = 0;
  for (AttentionPath path : {AttentionPath::flash_v2, AttentionPath::flash_v3}) {
    const std::string why = gpu_refusal(path);
    if (why.empty()) continue;
    ++refused;
    INFO(std::string(ts::nn::attention_path_name(path)), " refused: ", why);
    // The rung's reason names the instructions and this GPU's compute capability; the layer throws
    // it rather than run another rung.
    const std::string refusal = ts::nn::attention_path_refusal(path, x.q, x.k, x.v, true);
    CHECK(refusal.find(why) != std::string::npos);
    const ts::nn::CausalSelfAttention attn(path, 9, ts::kCUDA);
    CHECK_THROWS_WITH_AS(attn.forward(x.q, x.k, x.v), doctest::Contains("needs compute capability"), ts::Error);
  }
  if (refused == 0) MESSAGE("this GPU runs every fused path (the cases above check them)");
  // The automatic choice passes over the rungs this GPU lacks and still answers.
  CHECK(ts::scaled_dot_product_attention(x.q, x.k, x.v, {}, true).shape() == x.q.shape());
}

TEST_CASE("profiler cuda: nn attention: kernels and copies per forward, op by op, for every path") {
  if (no_gpu()) return;
  const uint64_t seed = fresh_seed();
  for (AttentionPath path : gpu_paths())
    for (DType dtype : {DType::bf16, DType::f32})
      for (bool causal : {true, false}) {
        if (!runs_on_gpu(path, dtype, 64)) continue;
        const Case c{2, 4, 256, 256, 64, causal};
        INFO(describe(path, dtype, c, seed));
        Qkv x = make_qkv(c, dtype, seed);
        x = {x.q.to(ts::kCUDA), x.k.to(ts::kCUDA), x.v.to(ts::kCUDA)};
        const ts::nn::CausalSelfAttention attn(path, 256, ts::kCUDA, causal);
        attn.forward(x.q, x.k, x.v);  // first-use costs (library handles, plans) outside the window
        ts::cuda::synchronize();
        prof::ProfilerConfig config;
        config.activities = {prof::Activity::CPU, prof::Activity::CUDA};
        prof::Profiler p(config);
        p.start();
        attn.forward(x.q, x.k, x.v);
        p.stop();
        REQUIRE(p.recording().device_activity.source == "cupti");
        const Launched got = launched_by_op(p.recording());
        std::map<std::string, int> want_kernels, want_copies;
        for (const ts::nn::ExpectedLaunch& e : ts::nn::expected_launches(path, causal, dtype)) {
          want_kernels[e.op] += e.kernels;
          want_copies[e.op] += e.memcpys;
        }
        for (const auto& [op, n] : got.kernels) {
          INFO("op ", op, ": ", n, " kernels");
          // cuBLAS may answer a GEMM with a split-K kernel and its reduce: more than one, never fewer.
          if (op == "ts::bmm") CHECK(n >= want_kernels[op]);
          else CHECK(n == want_kernels[op]);
        }
        for (const auto& [op, n] : want_kernels) {
          INFO("expected op ", op);
          CHECK(got.kernels.count(op) == (n > 0 ? 1u : 0u));
        }
        int copies = 0;
        for (const auto& [op, n] : got.memcpys) {
          INFO("copy charged to ", op);
          CHECK(n == want_copies[op]);
          copies += n;
        }
        CHECK(copies == ts::nn::expected_memcpys(path, causal, dtype));
        for (const std::string& name : got.memcpy_names) CHECK(name == "Memcpy DtoD (Device -> Device)");
      }
}

// ---- the walk-through and the README quote the committed H200 files -------------------------------

#ifdef TS_SOURCE_DIR

TEST_CASE("nn attention: every number tutorials/04_attention.md quotes is in the committed files it names") {
  const std::string corpus =
      ts::testing::read_folder("docs/h200-runs/04_attention") + ts::testing::read_folder("docs/cpu-runs/04_attention") +
      ts::testing::read_source("docs/pytorch-reference/torch-2.11-h200-part3-key-averages.txt") +
      ts::testing::read_source("docs/pytorch-reference/torch-2.11-h200-sdpa-flash-kernel-records.txt") +
      ts::testing::read_source("docs/series/torch-attention-profile.excerpts.md");  // the article lines the pages compare with
  // The walk-through, and its companion page for kernel writers (the flash rungs timed), against the same files.
  const ts::testing::QuoteCheck lesson = ts::testing::check_quotes(
      "tutorials/04_attention.md", ts::testing::read_source("tutorials/04_attention.md"), corpus);
  CHECK(lesson.numbers >= 90);        // the page quotes numbers...
  CHECK(lesson.excerpt_lines >= 60);  // ...and excerpts, and the check saw them
  const ts::testing::QuoteCheck kernels = ts::testing::check_quotes(
      "tutorials/04_attention_kernels.md", ts::testing::read_source("tutorials/04_attention_kernels.md"), corpus);
  CHECK(kernels.numbers >= 60);
  CHECK(kernels.excerpt_lines >= 40);
}

TEST_CASE("nn attention: every number of ops/attention/README.md's Measured and Tests sections is in the GPU runs' files") {
  const std::string readme = ts::testing::read_source("ops/attention/README.md");
  const size_t from = readme.find("## Measured"), to = readme.find("## What flash_v3 does not do yet");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string corpus = ts::testing::read_folder("docs/h200-runs/04_attention") +
                             ts::testing::read_folder("docs/h200-runs/gpu-check") +
                             ts::testing::read_folder("docs/h200-runs/bench_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_head_dims_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_conditional_rescale_h100") +
                             ts::testing::read_folder("docs/h200-runs/gemm_pingpong_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_v3_maps_by_value_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_v3_exp2_fma_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_v3_rescale_under_s_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_v3_d96_pv_n96_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_v3_beside_cudnn_ncu_h100") +
                             ts::testing::read_folder("docs/h200-runs/flash_v3_descriptor_advance_h100");
  const ts::testing::QuoteCheck n = ts::testing::check_quotes("ops/attention/README.md", readme.substr(from, to - from), corpus);
  CHECK(n.numbers >= 40);
}
#endif
