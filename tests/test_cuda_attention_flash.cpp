// tests/test_cuda_attention_flash.cpp: the flash rungs of scaled_dot_product_attention (flash_v1,
// flash_v2, flash_v3 and the steps on the way to it) called through their typed launchers, against
// a float64 reference written here. Each rung runs where the GPU has what its rung row needs
// (flash_v2: compute capability 8.0; flash_v3: 9.0 alone, and a build with sm_90a code; as
// TS_DEVICE_CAPABILITY chooses too): elsewhere its cases say so and check the others.
//
// Every case makes q, k, v on the CPU (standard normal values rounded to bf16/f16) and copies them
// over, so the reference sees exactly what the kernel saw. The output is poisoned (every byte 0xFF,
// a NaN bit pattern no kernel stores) before each run and checked bit by bit afterwards: every
// element must have been written. Seeds are fresh on every run (TS_TEST_SEED=N repeats one) and
// printed with any failure. The comparison is tests/support/compare.h's: relative L2 error,
// NaN-aware, worst element named.
//
// supports() refusals are checked on the CPU (they need no GPU). Without a GPU the other cases
// pass with a message saying why they did nothing. TS_GPU_TEST_QUICK=1 keeps the small shapes
// only; TS_GPU_TEST_QUICK=once (the sanitizer runs) two of them, one per block shape of flash_v3.
#include <doctest/doctest.h>

#include "tensor/cuda_device.h"

#if TS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ops/attention/attention_flash.h"
#include "ops/hopper_tensor_map.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "tensor/cuda_allocator.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_graph.h"
#include "tests/support/case_rng.h"
#include "tests/support/compare.h"
#include "tests/support/gpu_sweep.h"

using ts::DType;
using ts::Dims;
using ts::SdpaAttrs;
using ts::Tensor;

namespace {

using Launcher = void (*)(const Tensor&, const Tensor&, const Tensor&, const SdpaAttrs&, Tensor&);
using Supports = bool (*)(const Tensor&, const Tensor&, const Tensor&, const SdpaAttrs&, std::string*);

struct Rung {
  const char* name;
  Launcher run;
  Supports supports;
  const char* variant;  // the registry's row: what the GPU needs for it
};
constexpr const char* kV1 = "scaled_dot_product_attention/cuda/flash_v1";
constexpr const char* kV2 = "scaled_dot_product_attention/cuda/flash_v2";
constexpr const char* kV3 = "scaled_dot_product_attention/cuda/flash_v3";
const Rung kRungs[] = {{"flash_v1", ts::sdpa_cuda_flash_v1, ts::sdpa_cuda_flash_v1_supports, kV1},
                       {"flash_v2", ts::sdpa_cuda_flash_v2, ts::sdpa_cuda_flash_v2_supports, kV2},
                       {"flash_v3", ts::sdpa_cuda_flash_v3, ts::sdpa_cuda_flash_v3_supports, kV3}};
// flash_v3's kernel without its last techniques (ts::FlashV3Step; the last step is flash_v3).
template <ts::FlashV3Step kStep>
void run_step(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs, Tensor& out) {
  ts::sdpa_cuda_flash_v3_step(q, k, v, attrs, out, kStep);
}
const Rung kV3Steps[] = {
    {"flash_v3 step wgmma", run_step<ts::FlashV3Step::wgmma>, ts::sdpa_cuda_flash_v3_supports, kV3},
    {"flash_v3 step ring", run_step<ts::FlashV3Step::ring>, ts::sdpa_cuda_flash_v3_supports, kV3},
    {"flash_v3 step overlap", run_step<ts::FlashV3Step::overlap>, ts::sdpa_cuda_flash_v3_supports, kV3}};
constexpr DType kHalfTypes[] = {DType::bf16, DType::f16};

bool no_gpu() {
  if (ts::cuda::is_available()) return false;
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
  return true;
}

using ts::testing::gpu_quick;
using ts::testing::gpu_sweep;
using ts::testing::Sweep;

// A new seed per test run (printed on failure), or TS_TEST_SEED to repeat one.
uint64_t fresh_seed() {
  return ts::testing::env_u64("TS_TEST_SEED", (static_cast<uint64_t>(std::random_device{}()) << 16) ^ std::random_device{}());
}

struct Shape {
  int64_t B, H, S, L;
};

// softmax(scale * q k^T, causal: key j visible to query i when j <= i) v, in double, from the
// definition. A row with a NaN among its visible scores is NaN; a row with no visible key is 0.
// `rows`: only these queries of each (batch, head), out [B, H, rows.size(), D]; empty: all of them.
std::vector<double> reference(const Tensor& q_cpu, const Tensor& k_cpu, const Tensor& v_cpu, bool causal,
                              double scale, std::vector<int64_t> rows = {}) {
  const int64_t B = q_cpu.shape()[0], H = q_cpu.shape()[1], S = q_cpu.shape()[2], D = q_cpu.shape()[3];
  const int64_t L = k_cpu.shape()[2];
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(D));
  if (rows.empty())
    for (int64_t i = 0; i < S; ++i) rows.push_back(i);
  const int64_t R = static_cast<int64_t>(rows.size());
  const std::vector<double> q = q_cpu.to_vector<double>(), k = k_cpu.to_vector<double>(),
                            v = v_cpu.to_vector<double>();  // row-major [B, H, seq, D], whatever the strides
  std::vector<double> out(static_cast<size_t>(B * H * R * D), 0.0);
  std::vector<double> s(static_cast<size_t>(L));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t r = 0; r < R; ++r) {
      const int64_t i = rows[static_cast<size_t>(r)];
      const double* qi = &q[static_cast<size_t>((bh * S + i) * D)];
      double* oi = &out[static_cast<size_t>((bh * R + r) * D)];
      const int64_t visible = causal ? std::min(L, i + 1) : L;
      if (visible == 0) continue;  // no key: 0
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t j = 0; j < visible; ++j) {
        const double* kj = &k[static_cast<size_t>((bh * L + j) * D)];
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
        s[static_cast<size_t>(j)] = scale * dot;
        nan |= std::isnan(s[static_cast<size_t>(j)]);
        m = std::max(m, s[static_cast<size_t>(j)]);
      }
      if (nan) {
        for (int64_t d = 0; d < D; ++d) oi[d] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < visible; ++j) {
        const double p = std::exp(s[static_cast<size_t>(j)] - m);
        sum += p;
        const double* vj = &v[static_cast<size_t>((bh * L + j) * D)];
        for (int64_t d = 0; d < D; ++d) oi[d] += p * vj[d];
      }
      for (int64_t d = 0; d < D; ++d) oi[d] /= sum;
    }
  return out;
}

struct Inputs {
  Tensor q_cpu, k_cpu, v_cpu, q, k, v;
};

// Standard normal q [B, H, S, D], k and v [B, H, L, D] of `dtype` on both devices. `bshd`: each is a
// [B, seq, H, D] tensor transposed to [B, H, seq, D] (a view: strides (seq*H*D, D, H*D, 1)).
Inputs make_inputs(const Shape& sh, int64_t D, DType dtype, uint64_t seed, bool bshd = false) {
  Inputs in;
  ts::manual_seed(seed);
  auto make = [&](int64_t seq, Tensor& cpu, Tensor& gpu) {
    if (bshd) {
      const Tensor base = ts::randn({sh.B, seq, sh.H, D}, dtype);
      cpu = base.transpose(1, 2);
      gpu = base.to(ts::kCUDA).transpose(1, 2);
    } else {
      cpu = ts::randn({sh.B, sh.H, seq, D}, dtype);
      gpu = cpu.to(ts::kCUDA);
    }
  };
  make(sh.S, in.q_cpu, in.q);
  make(sh.L, in.k_cpu, in.k);
  make(sh.L, in.v_cpu, in.v);
  return in;
}

// An output [B, H, S, D] whose every byte is 0xFF: 0xFFFF is a NaN in bf16 and in f16, and one no
// kernel stores (a NaN result is stored as the canonical 0x7FFF).
Tensor poisoned_out(const Tensor& q) {
  Tensor out = ts::empty(q.shape(), {q.dtype(), ts::kCUDA});
  TS_CUDA_CHECK(cudaMemset(out.data_ptr(), 0xFF, static_cast<size_t>(out.numel()) * out.element_size()));
  return out;
}

// Elements of a bf16/f16 tensor that still hold the poison.
int64_t unwritten(const Tensor& out_cpu) {
  const auto* bits = static_cast<const uint16_t*>(out_cpu.data_ptr());
  int64_t n = 0;
  for (int64_t e = 0; e < out_cpu.numel(); ++e) n += bits[e] == 0xFFFF;
  return n;
}

// Runs `rung` on the inputs into a poisoned output, waits, and returns the output on the CPU.
Tensor run_rung(const Rung& rung, const Inputs& in, const SdpaAttrs& attrs) {
  Tensor out = poisoned_out(in.q);
  rung.run(in.q, in.k, in.v, attrs, out);
  ts::cuda::check_launch(rung.name);
  ts::cuda::synchronize();
  return out.to(ts::kCPU);
}

std::string describe(const Rung& rung, DType dtype, const Shape& sh, int64_t D, bool causal, uint64_t seed) {
  return fmt::format("{} {} B={} H={} S={} L={} D={} causal={} seed={}", rung.name, ts::dtype_short_name(dtype), sh.B,
                     sh.H, sh.S, sh.L, D, causal, seed);
}

// Both rungs on one set of inputs against one reference; poison and values checked.
void check_rungs(const Inputs& in, DType dtype, const Shape& sh, int64_t D, const SdpaAttrs& attrs, uint64_t seed,
                 const std::vector<const Rung*>& rungs) {
  const std::vector<double> want = reference(in.q_cpu, in.k_cpu, in.v_cpu, attrs.is_causal, attrs.scale);
  for (const Rung* rung : rungs) {
    INFO(describe(*rung, dtype, sh, D, attrs.is_causal, seed), " scale=", attrs.scale);
    std::string why;
    REQUIRE_MESSAGE(rung->supports(in.q, in.k, in.v, attrs, &why), why);
    const Tensor got = run_rung(*rung, in, attrs);
    CHECK_MESSAGE(unwritten(got) == 0, unwritten(got), " output elements never written");
    CHECK_CLOSE(got, want, ts::testing::tolerance_for(dtype), seed);
  }
}

// Whether cuda:0 (where the tests make their tensors) has what the rung's row needs; the first time
// it has not, the reason is said once.
bool runs_here(const Rung& rung) {
  const ts::Variant* v = ts::find_variant(rung.variant);
  REQUIRE_MESSAGE(v != nullptr, std::string(rung.variant), " is not registered");
  std::string why;
  if (ts::gpu_meets(v->needs, ts::kCUDA, &why)) return true;
  static std::set<std::string> said;
  if (said.insert(rung.variant).second) MESSAGE(std::string(rung.variant), " not checked on this GPU: ", why);
  return false;
}

// The rungs this GPU runs; with_steps adds flash_v3's earlier steps.
std::vector<const Rung*> all_rungs(bool with_steps = false) {
  std::vector<const Rung*> rungs;
  for (const Rung& rung : kRungs)
    if (runs_here(rung)) rungs.push_back(&rung);
  if (with_steps)
    for (const Rung& step : kV3Steps)
      if (runs_here(step)) rungs.push_back(&step);
  return rungs;
}

}  // namespace

// ---- supports() and the tensor maps' specs: no GPU needed ------------------------------------

// What flash_v3 asks the driver for (ops/hopper_tensor_map.h): dims from the innermost, strides in
// bytes from the second dim, the box; a dim of size 1 stepped by the extent of the dims inside it
// (any legal stride: it is never stepped), so a broadcast head (stride 0) is still a legal map.
TEST_CASE("flash attention: the specs of flash_v3's tensor maps: dims innermost first, strides in bytes") {
  int base = 0;
  // q [2, 3, 130, 64] contiguous, boxes of 128 rows x 64 columns.
  const ts::hopper::TensorMapSpec q = ts::hopper::tensor_map_spec_16bit_4d(&base, 2, 3, 130, 64, 3 * 130 * 64,
                                                                           130 * 64, 64, 128, 64, "q");
  CHECK(q.rank == 4);
  CHECK(q.dims == std::array<uint64_t, 4>{64, 130, 3, 2});
  CHECK(q.strides == std::array<uint64_t, 3>{128, 130 * 128, 3 * 130 * 128});
  CHECK(q.box == std::array<uint32_t, 4>{64, 128, 1, 1});
  // k with one head for all (stride 0), read as a head dim of size 1.
  const ts::hopper::TensorMapSpec k = ts::hopper::tensor_map_spec_16bit_4d(&base, 2, 1, 77, 64, 77 * 64, 0, 64, 176,
                                                                           64, "k");
  CHECK(k.strides == std::array<uint64_t, 3>{128, 77 * 128, 77 * 128});
  // One batch of a [1, 257, 40] matrix with a padded row of 48 elements.
  const ts::hopper::TensorMapSpec a = ts::hopper::tensor_map_spec_16bit(&base, 1, 257, 40, 48, 0, 128, 64, "a");
  CHECK(a.rank == 3);
  CHECK(a.dims[0] == 40);
  CHECK(a.strides[0] == 96);
  CHECK(a.strides[1] == 96 * 257);
  // Equal specs make the same map; the same layout at another address does not.
  CHECK(q == ts::hopper::tensor_map_spec_16bit_4d(&base, 2, 3, 130, 64, 3 * 130 * 64, 130 * 64, 64, 128, 64, "q"));
  int other = 0;
  CHECK_FALSE(q == ts::hopper::tensor_map_spec_16bit_4d(&other, 2, 3, 130, 64, 3 * 130 * 64, 130 * 64, 64, 128, 64,
                                                        "q"));
  // The 128-byte swizzle unless set: V at D = 96 is read in 32-column boxes with the 64-byte one,
  // another map than the same boxes with the default.
  CHECK(q.swizzle_bytes == 128);
  ts::hopper::TensorMapSpec v = ts::hopper::tensor_map_spec_16bit_4d(&base, 2, 3, 130, 96, 3 * 130 * 96, 130 * 96, 96,
                                                                     176, 32, "v");
  const ts::hopper::TensorMapSpec v_default = v;
  v.swizzle_bytes = 64;
  CHECK(v.box == std::array<uint32_t, 4>{32, 176, 1, 1});
  CHECK_FALSE(v == v_default);
  // A swizzle the kernels here do not use is refused before the driver is asked (no GPU needed).
  v.swizzle_bytes = 32;
  CHECK_THROWS_WITH_AS(ts::hopper::make_tensor_map(v), doctest::Contains("v: a swizzle of 32 bytes (128 or 64 here)"),
                       ts::Error);
}


TEST_CASE("flash attention: supports() refusals name the reason, on any machine") {
  const SdpaAttrs attrs;
  auto t = [](const Dims& shape, DType dtype = DType::bf16) { return ts::empty(shape, dtype); };
  const Tensor q = t({2, 3, 17, 64}), kv = t({2, 3, 9, 64});
  auto reason = [&](const Rung& rung, const Tensor& qq, const Tensor& kk, const Tensor& vv,
                    const SdpaAttrs& call_attrs = SdpaAttrs{}) {
    std::string why;
    const bool ok = rung.supports(qq, kk, vv, call_attrs, &why);
    CHECK_FALSE(ok);
    CHECK(rung.supports(qq, kk, vv, call_attrs, nullptr) == ok);  // why may be null
    return why;
  };
  for (const Rung& rung : kRungs) {
    INFO(rung.name);
    CHECK_MESSAGE(reason(rung, t({2, 3, 17, 64}, DType::f32), t({2, 3, 9, 64}, DType::f32),
                         t({2, 3, 9, 64}, DType::f32)).find("dtype f32 is not supported") != std::string::npos,
                  "f32");
    CHECK(reason(rung, q, t({2, 3, 9, 64}, DType::f16), kv).find("share one dtype") != std::string::npos);
    CHECK(reason(rung, t({3, 17, 64}), t({3, 9, 64}), t({3, 9, 64})).find("expected 4-D") != std::string::npos);
    CHECK(reason(rung, q, t({2, 3, 9, 32}), t({2, 3, 9, 32})).find("expected q [B, H, S, D]") != std::string::npos);
    CHECK(reason(rung, q, kv, t({2, 3, 8, 64})).find("expected q [B, H, S, D]") != std::string::npos);
    CHECK(reason(rung, q, t({1, 3, 9, 64}), t({1, 3, 9, 64})).find("expected q [B, H, S, D]") != std::string::npos);
    CHECK(reason(rung, q, kv, kv).find("runs on cuda, q is on cpu") != std::string::npos);
    CHECK(reason(rung, t({1, 1, 4, 160}), t({1, 1, 4, 160}), t({1, 1, 4, 160})).find("head dim 160") !=
          std::string::npos);
    // Scales the kernels' float cannot hold once multiplied by log2(e): 0 or subnormal, infinite, NaN.
    for (const double scale : {1e-50, -1e-40, std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN()}) {
      const std::string why = reason(rung, q, kv, kv, SdpaAttrs{false, scale});
      CHECK_MESSAGE(why.find(fmt::format("sdpa {}: scale {} is", rung.name, scale)) != std::string::npos, why);
      CHECK_MESSAGE(why.find("once multiplied by log2(e)") != std::string::npos, why);
    }
    // 1e-37 * log2(e) is a normal float: only the device stands in the way
    CHECK(reason(rung, q, kv, kv, SdpaAttrs{true, -1e-37}).find("runs on cuda") != std::string::npos);
    // The launcher refuses with the same reason, as a ts::Error (no crash, no GPU touched).
    Tensor out = t({2, 3, 17, 64});
    CHECK_THROWS_WITH_AS(rung.run(q, kv, kv, attrs, out), doctest::Contains("runs on cuda"), ts::Error);
  }
  const Rung& v1 = kRungs[0];
  const Rung& v2 = kRungs[1];
  const Rung& v3 = kRungs[2];
  // Head dims: v1 takes 1..128, v2 64, 96 and 128, v3 those and 192 and 256.
  for (int64_t D : {1, 33, 80, 127}) {
    const Tensor x = t({1, 2, 5, D});
    CHECK(reason(v1, x, x, x).find("runs on cuda") != std::string::npos);  // only the device stands in the way
    CHECK(reason(v2, x, x, x).find(fmt::format("head dim {} is not supported (64, 96 or 128;", D)) !=
          std::string::npos);
    CHECK(reason(v3, x, x, x).find(fmt::format("head dim {} is not supported (64, 96, 128, 192 or 256;", D)) !=
          std::string::npos);
  }
  for (int64_t D : {96, 192, 256}) {
    const Tensor x = t({1, 2, 5, D});
    if (D == 96) CHECK(reason(v2, x, x, x).find("runs on cuda") != std::string::npos);
    CHECK(reason(v3, x, x, x).find("runs on cuda") != std::string::npos);
  }
  CHECK(reason(v2, t({1, 2, 5, 192}), t({1, 2, 5, 192}), t({1, 2, 5, 192})).find("head dim 192 is not supported") !=
        std::string::npos);
  // Strides: v1 reads any; v2 needs a unit last stride and rows of whole 16-byte chunks.
  const Tensor stepped = t({1, 2, 5, 129}).slice(3, 0, 128, 2);   // last stride 2, D = 64
  const Tensor odd_rows = t({1, 2, 5, 68}).narrow(3, 0, 64);      // row stride 68 elements
  const Tensor bshd = t({1, 5, 2, 64}).transpose(1, 2);            // [B, S, H, D] as [B, H, S, D]
  for (const Tensor& x : {stepped, odd_rows}) {
    CHECK(reason(v1, x, x, x).find("runs on cuda") != std::string::npos);
    CHECK(reason(v2, x, x, x).find("unit last stride, other strides multiples of 8") != std::string::npos);
    CHECK(reason(v3, x, x, x).find("unit last stride, other strides multiples of 8") != std::string::npos);
  }
  CHECK(reason(v2, bshd, bshd, bshd).find("runs on cuda") != std::string::npos);  // a transposed view is fine
  CHECK(reason(v3, bshd, bshd, bshd).find("runs on cuda") != std::string::npos);
  // The steps of v3 share its checks and its launcher's refusals.
  Tensor out = t({2, 3, 17, 64});
  for (const Rung& step : kV3Steps)
    CHECK_THROWS_WITH_AS(step.run(q, kv, kv, attrs, out), doctest::Contains("sdpa flash_v3: runs on cuda"), ts::Error);
}

// ---- on the GPU ------------------------------------------------------------------------------------

TEST_CASE("cuda: flash attention v1, v2, v3 (and v3's steps) against float64: shapes, L != S, head dims, causal, "
          "dtypes") {
  if (no_gpu()) return;
  const uint64_t base_seed = fresh_seed();
  MESSAGE("seed base ", base_seed);
  // flash_v3 picks its block shape from D, S and the mask (its launch_for): S = 383 and 2000 run
  // its 192-query blocks at D = 64, the others its 128-query ones; D = 128 without the mask its
  // 176-key tiles.
  std::vector<Shape> shapes = {{1, 1, 1, 1},   {1, 2, 7, 7},    {2, 1, 65, 65},    {1, 3, 7, 300},
                               {2, 2, 130, 64}, {1, 1, 1, 129}, {1, 2, 129, 127}, {1, 2, 383, 383}};
  if (gpu_sweep() == Sweep::once) shapes = {{2, 1, 65, 65}, {1, 2, 383, 383}};  // every kernel once
  if (!gpu_quick()) {
    shapes.push_back({1, 2, 1000, 1000});
    shapes.push_back({1, 2, 2000, 1999});
    shapes.push_back({3, 47, 65, 65});  // 141 (batch, head) pairs: more than the 132 SMs of an H200
    shapes.push_back({1, 2, 1000, 333});
  }
  uint64_t seed = base_seed;
  for (const Shape& sh : shapes)
    for (int64_t D : {64, 128})
      for (DType dtype : kHalfTypes)
        for (bool causal : {false, true}) {
          const Inputs in = make_inputs(sh, D, dtype, ++seed);
          check_rungs(in, dtype, sh, D, SdpaAttrs{causal, 0}, seed, all_rungs(/*with_steps=*/true));
        }
}

TEST_CASE("cuda: flash attention: explicit and negative scales, v1's other head dims") {
  if (no_gpu()) return;
  uint64_t seed = fresh_seed();
  MESSAGE("seed base ", seed);
  for (double scale : {0.3, -0.2})
    for (bool causal : {false, true})
      for (DType dtype : kHalfTypes) {
        const Shape sh{2, 3, 67, 90};
        const Inputs in = make_inputs(sh, 64, dtype, ++seed);
        check_rungs(in, dtype, sh, 64, SdpaAttrs{causal, scale}, seed, all_rungs());
      }
  // A scale the kernels' float cannot hold (1e-50 is 0 there): dispatch passes the flash rungs by
  // for the math rung, which gives softmax(1e-50 q k^T) v (v averaged over the visible keys), and a
  // flash rung called by name refuses it with a ts::Error.
  {
    const Shape sh{1, 2, 33, 40};
    const Inputs in = make_inputs(sh, 64, DType::bf16, ++seed);
    for (bool causal : {false, true}) {
      INFO("scale 1e-50 causal=", causal, " seed=", seed);
      const Tensor got = ts::scaled_dot_product_attention(in.q, in.k, in.v, {}, causal, 1e-50);
      // the math rung rounds its scores, probabilities and output: twice the one-op tolerance
      CHECK_CLOSE(got, reference(in.q_cpu, in.k_cpu, in.v_cpu, causal, 1e-50),
                  2 * ts::testing::tolerance_for(DType::bf16), seed);
    }
    for (const Rung* rung : all_rungs(/*with_steps=*/true)) {
      Tensor out = poisoned_out(in.q);
      CHECK_THROWS_WITH_AS(rung->run(in.q, in.k, in.v, SdpaAttrs{false, 1e-50}, out),
                           doctest::Contains("once multiplied by log2(e)"), ts::Error);
    }
  }
  for (int64_t D : {1, 33, 96})
    for (bool causal : {false, true}) {
      const Shape sh{1, 2, 37, 45};
      const Inputs in = make_inputs(sh, D, DType::bf16, ++seed);
      check_rungs(in, DType::bf16, sh, D, SdpaAttrs{causal, 0}, seed, {&kRungs[0]});  // v1 runs on every GPU
    }
}

// The head dims past 64 and 128: 96 (flash_v1, flash_v2, flash_v3), 192 and 256 (flash_v3 alone),
// each of flash_v3's block shapes for them (D = 96: 128 x 128 causal, 128 x 176 without the mask;
// 192: 128 x 112; 256: 128 x 80) on odd S and L, L != S, both masks, both dtypes.
TEST_CASE("cuda: flash attention: head dims 96, 192 and 256 against float64, odd shapes, both masks and dtypes") {
  if (no_gpu()) return;
  const uint64_t base_seed = fresh_seed();
  MESSAGE("seed base ", base_seed);
  std::vector<Shape> shapes = {{1, 1, 1, 1}, {1, 2, 7, 7}, {2, 1, 65, 65}, {1, 2, 129, 127}, {1, 3, 200, 301}};
  if (gpu_sweep() == Sweep::once) shapes = {{2, 1, 65, 65}};  // every kernel once
  if (!gpu_quick()) {
    shapes.push_back({1, 2, 383, 383});
    shapes.push_back({1, 2, 1000, 999});
    shapes.push_back({3, 47, 65, 65});  // more (batch, head) pairs than SMs
  }
  uint64_t seed = base_seed;
  for (const Shape& sh : shapes)
    for (int64_t D : {96, 192, 256})
      for (DType dtype : kHalfTypes)
        for (bool causal : {false, true}) {
          const Inputs in = make_inputs(sh, D, dtype, ++seed);
          std::vector<const Rung*> rungs;  // those with a kernel for D (v1: up to 128; v2: 96)
          for (const Rung* rung : all_rungs())
            if (rung->supports(in.q, in.k, in.v, {}, nullptr)) rungs.push_back(rung);
          check_rungs(in, dtype, sh, D, SdpaAttrs{causal, 0}, seed, rungs);
        }
}

// Scores spread far: at scale 1 the scores' standard deviation is sqrt(D) (16 at D = 256, 23 in
// log2 units), so a row's max moves by more than flash_v3's conditional rescale lets pass (8 in
// log2 units) on some later tiles and by less on others: O rescaled mid-row, and P up to 2^8
// between moves. Every head dim and rung that takes it, both masks and dtypes.
TEST_CASE("cuda: flash attention: scores spread far (scale 1): the running max moves mid-row, every head dim") {
  if (no_gpu()) return;
  const uint64_t base_seed = fresh_seed();
  MESSAGE("seed base ", base_seed);
  std::vector<Shape> shapes = {{1, 2, 383, 383}, {2, 1, 65, 300}};
  if (gpu_sweep() == Sweep::once) shapes = {{1, 2, 383, 383}};
  if (!gpu_quick()) shapes.push_back({1, 2, 1000, 999});
  uint64_t seed = base_seed;
  for (const Shape& sh : shapes)
    for (int64_t D : {64, 96, 128, 192, 256})
      for (DType dtype : kHalfTypes)
        for (bool causal : {false, true}) {
          const Inputs in = make_inputs(sh, D, dtype, ++seed);
          const SdpaAttrs attrs{causal, 1.0};
          std::vector<const Rung*> rungs;  // those with a kernel for D
          for (const Rung* rung : all_rungs())
            if (rung->supports(in.q, in.k, in.v, attrs, nullptr)) rungs.push_back(rung);
          check_rungs(in, dtype, sh, D, attrs, seed, rungs);
        }
}

// A sequence past 16k: S = L = 32768, B = 1, H = 16, D = 128 (flash_v2 and flash_v3), both masks.
// The float64 reference of every row would be ~10^13 operations: 24 rows per head are checked (the
// first, the last, and rows between, odd ones among them), every output element for being written.
TEST_CASE("cuda: flash attention: S = 32768 against float64 on sampled rows") {
  if (no_gpu()) return;
  if (gpu_quick()) {
    MESSAGE("skipped: TS_GPU_TEST_QUICK keeps the small shapes");
    return;
  }
  std::vector<const Rung*> rungs;  // flash_v1, the slow rung, has the small shapes of the cases above
  for (const Rung* rung : all_rungs())
    if (std::string(rung->name) != "flash_v1") rungs.push_back(rung);
  if (rungs.empty()) {
    MESSAGE("skipped: neither flash_v2 nor flash_v3 runs on this GPU");
    return;
  }
  const uint64_t seed = fresh_seed();
  MESSAGE("seed ", seed);
  const Shape sh{1, 16, 32768, 32768};
  const int64_t D = 128;
  const Inputs in = make_inputs(sh, D, DType::bf16, seed);
  std::vector<int64_t> rows = {0, 1, 127, 128, 4095, 16383, 16384, 32766, 32767};
  std::mt19937_64 rng(seed);
  while (rows.size() < 24) rows.push_back(static_cast<int64_t>(rng() % 32768));
  for (bool causal : {false, true}) {
    const std::vector<double> want = reference(in.q_cpu, in.k_cpu, in.v_cpu, causal, 0, rows);
    for (const Rung* rung : rungs) {
      INFO(describe(*rung, DType::bf16, sh, D, causal, seed));
      const Tensor got = run_rung(*rung, in, SdpaAttrs{causal, 0});
      CHECK(unwritten(got) == 0);
      const Tensor all = got.reshape({sh.H, sh.S, D});
      Tensor picked = ts::empty({sh.H, static_cast<int64_t>(rows.size()), D}, DType::bf16);
      for (size_t r = 0; r < rows.size(); ++r) {
        Tensor row = picked.narrow(1, static_cast<int64_t>(r), 1);
        ts::copy_(row, all.narrow(1, rows[r], 1));
      }
      CHECK_CLOSE(picked, want, ts::testing::tolerance_for(DType::bf16), seed);
    }
  }
}

TEST_CASE("cuda: flash attention: a NaN in q makes that row NaN and no other") {
  if (no_gpu()) return;
  uint64_t seed = fresh_seed();
  MESSAGE("seed base ", seed);
  const Shape sh{2, 2, 70, 70};
  for (int64_t D : {64, 128})
    for (DType dtype : kHalfTypes)
      for (bool causal : {false, true}) {
        Inputs in = make_inputs(sh, D, dtype, ++seed);
        // q[1, 0, 5, 3] = NaN (CPU copy), then copied over again.
        const uint16_t nan_bits = dtype == DType::bf16 ? 0x7FC0 : 0x7E00;
        const int64_t row = (1 * sh.H + 0) * sh.S + 5;
        static_cast<uint16_t*>(in.q_cpu.data_ptr())[row * D + 3] = nan_bits;
        in.q = in.q_cpu.to(ts::kCUDA);
        const std::vector<double> want = reference(in.q_cpu, in.k_cpu, in.v_cpu, causal, 0);
        for (const Rung* r : all_rungs(/*with_steps=*/true)) {
          const Rung& rung = *r;
          INFO(describe(rung, dtype, sh, D, causal, seed));
          const Tensor got = run_rung(rung, in, SdpaAttrs{causal, 0});
          CHECK(unwritten(got) == 0);
          const std::vector<double> g = got.to_vector<double>();
          int64_t nan_in_row = 0, nan_elsewhere = 0;
          for (int64_t e = 0; e < got.numel(); ++e)
            (e / D == row ? nan_in_row : nan_elsewhere) += std::isnan(g[static_cast<size_t>(e)]);
          CHECK(nan_in_row == D);
          CHECK(nan_elsewhere == 0);
          CHECK_CLOSE(got, want, ts::testing::tolerance_for(dtype), seed);  // NaN where the reference has it
        }
      }
}

TEST_CASE("cuda: flash attention reads a [B, S, H, D] tensor transposed to [B, H, S, D] in place") {
  if (no_gpu()) return;
  uint64_t seed = fresh_seed();
  MESSAGE("seed base ", seed);
  const Shape sh{2, 3, 100, 77};
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      const DType dtype = DType::bf16;
      const Inputs in = make_inputs(sh, D, dtype, ++seed, /*bshd=*/true);
      REQUIRE_FALSE(in.q.is_contiguous());
      CHECK(in.q.strides() == Dims{sh.S * sh.H * D, D, sh.H * D, 1});
      const std::vector<double> want = reference(in.q_cpu, in.k_cpu, in.v_cpu, causal, 0);
      for (const Rung* r : all_rungs()) {
        const Rung& rung = *r;
        INFO(describe(rung, dtype, sh, D, causal, seed), " [B, S, H, D] transposed");
        Tensor out = poisoned_out(in.q);
        ts::cuda::synchronize();
        ts::cuda::reset_peak_memory_stats();
        const ts::AllocatorStats before = ts::cuda::memory_stats();
        rung.run(in.q, in.k, in.v, SdpaAttrs{causal, 0}, out);
        const ts::AllocatorStats after = ts::cuda::memory_stats();
        CHECK(after.peak_allocated == before.allocated);  // not one byte more, even for a moment: no copy
        ts::cuda::check_launch(rung.name);
        ts::cuda::synchronize();
        const Tensor got = out.to(ts::kCPU);
        CHECK(unwritten(got) == 0);
        CHECK_CLOSE(got, want, ts::testing::tolerance_for(dtype), seed);
      }
    }
}

TEST_CASE("cuda: flash attention reads k and v expanded over heads (stride 0) in place") {
  if (no_gpu()) return;
  uint64_t seed = fresh_seed();
  MESSAGE("seed base ", seed);
  const Shape sh{2, 4, 33, 50};
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      const DType dtype = DType::f16;
      Inputs in = make_inputs(sh, D, dtype, ++seed);
      // One k/v head shared by all H query heads (multi-query attention), as a stride-0 view.
      const Tensor k1 = in.k_cpu.narrow(1, 0, 1), v1 = in.v_cpu.narrow(1, 2, 1);
      in.k_cpu = k1.expand({sh.B, sh.H, sh.L, D});
      in.v_cpu = v1.expand({sh.B, sh.H, sh.L, D});
      in.k = k1.to(ts::kCUDA).expand({sh.B, sh.H, sh.L, D});
      in.v = v1.to(ts::kCUDA).expand({sh.B, sh.H, sh.L, D});
      REQUIRE(in.k.strides()[1] == 0);
      check_rungs(in, dtype, sh, D, SdpaAttrs{causal, 0}, seed, all_rungs());
    }
}

TEST_CASE("cuda: flash attention: no keys (L = 0) gives 0, and bad outputs and head dims throw ts::Error") {
  if (no_gpu()) return;
  const Shape sh{1, 2, 9, 0};
  const Inputs in = make_inputs(sh, 64, DType::f16, 7);
  for (const Rung* r : all_rungs(/*with_steps=*/true)) {
    const Rung& rung = *r;
    INFO(rung.name);
    for (bool causal : {false, true}) {
      const Tensor got = run_rung(rung, in, SdpaAttrs{causal, 0});
      CHECK(unwritten(got) == 0);
      for (double x : got.to_vector<double>()) CHECK(x == 0.0);
    }
    const Inputs ok = make_inputs({1, 2, 9, 5}, 64, DType::bf16, 8);
    Tensor wrong_shape = ts::empty({1, 2, 9, 32}, {DType::bf16, ts::kCUDA});
    CHECK_THROWS_WITH_AS(rung.run(ok.q, ok.k, ok.v, {}, wrong_shape), doctest::Contains("out must be a contiguous"),
                         ts::Error);
    Tensor wrong_dtype = ts::empty({1, 2, 9, 64}, {DType::f16, ts::kCUDA});
    CHECK_THROWS_AS(rung.run(ok.q, ok.k, ok.v, {}, wrong_dtype), ts::Error);
    Tensor strided = ts::empty({1, 2, 64, 9}, {DType::bf16, ts::kCUDA}).transpose(2, 3);
    CHECK_THROWS_AS(rung.run(ok.q, ok.k, ok.v, {}, strided), ts::Error);
  }
  // A GPU without what a rung needs gets its reason, as a ts::Error, from the launcher too.
  for (const Rung& rung : kRungs) {
    const ts::Variant* v = ts::find_variant(rung.variant);
    std::string why;
    if (ts::gpu_meets(v->needs, ts::kCUDA, &why)) continue;
    const Inputs ok = make_inputs({1, 2, 9, 5}, 64, DType::bf16, 10);
    Tensor o = ts::empty_like(ok.q);
    CHECK_THROWS_WITH_AS(rung.run(ok.q, ok.k, ok.v, {}, o), doctest::Contains("needs compute capability"), ts::Error);
  }
  const Inputs d80 = make_inputs({1, 2, 9, 5}, 80, DType::bf16, 9);
  Tensor out = ts::empty({1, 2, 9, 80}, {DType::bf16, ts::kCUDA});
  CHECK_THROWS_WITH_AS(ts::sdpa_cuda_flash_v2(d80.q, d80.k, d80.v, {}, out), doctest::Contains("head dim 80"),
                       ts::Error);
  CHECK_THROWS_WITH_AS(ts::sdpa_cuda_flash_v3(d80.q, d80.k, d80.v, {}, out), doctest::Contains("head dim 80"),
                       ts::Error);
  // flash_v3's steps exist for head dims 64 and 128 only; flash_v3 itself takes 96, 192 and 256.
  if (runs_here(kRungs[2]))
    for (int64_t D : {96, 192, 256}) {
      const Inputs in = make_inputs({1, 2, 9, 5}, D, DType::bf16, 11);
      Tensor o = ts::empty_like(in.q);
      for (const Rung& step : kV3Steps)
        CHECK_THROWS_WITH_AS(step.run(in.q, in.k, in.v, {}, o), doctest::Contains("built for head dims 64 and 128"),
                             ts::Error);
    }
}

// flash_v3's rung when cuda:0 runs it; null (the caller returns) when there is no GPU or it is another.
const Rung* flash_v3_here() {
  if (no_gpu()) return nullptr;
  const Rung& v3 = kRungs[2];
  REQUIRE(std::string(v3.name) == "flash_v3");
  return runs_here(v3) ? &v3 : nullptr;
}

// A bf16 output written whole and within bf16's tolerance of the float64 reference on `in`.
void check_bf16_output(const Inputs& in, const Tensor& got, const SdpaAttrs& attrs, uint64_t seed) {
  CHECK(unwritten(got) == 0);
  CHECK_CLOSE(got, reference(in.q_cpu, in.k_cpu, in.v_cpu, attrs.is_causal, attrs.scale),
              ts::testing::tolerance_for(DType::bf16), seed);
}

// flash_v3 needs a TMA descriptor per input per call; the maker keeps them (ops/hopper_tensor_map.h),
// keyed by address and layout, never by contents. A repeated call asks the driver for none; the same
// memory holding new values (as a tensor made where a freed one was) is read through the kept maps
// and gives the new answer; another layout at the same address, and new tensors, get maps of their
// own.
TEST_CASE("cuda: flash_v3's TMA descriptors are encoded once per address and layout, whatever the memory holds") {
  const Rung* rung = flash_v3_here();
  if (rung == nullptr) return;
  const Rung& v3 = *rung;
  uint64_t seed = fresh_seed();
  MESSAGE("seed base ", seed);
  const Shape sh{2, 3, 130, 129};
  const int64_t D = 64;
  const SdpaAttrs attrs{true, 0};
  const auto check = [&](const Inputs& inputs, const Tensor& got) { check_bf16_output(inputs, got, attrs, seed); };
  Inputs in = make_inputs(sh, D, DType::bf16, ++seed);
  const Tensor got = run_rung(v3, in, attrs);
  check(in, got);
  const int64_t encoded = ts::hopper::tensor_map_encodes();
  const Tensor again = run_rung(v3, in, attrs);
  CHECK(ts::hopper::tensor_map_encodes() == encoded);  // the same three maps: no driver call
  CHECK(again.to_vector<double>() == got.to_vector<double>());

  // New values in the same memory, as q, k, v made again where freed ones were.
  const Inputs fresh = make_inputs(sh, D, DType::bf16, ++seed);
  ts::copy_(in.q, fresh.q);
  ts::copy_(in.k, fresh.k);
  ts::copy_(in.v, fresh.v);
  in.q_cpu = fresh.q_cpu, in.k_cpu = fresh.k_cpu, in.v_cpu = fresh.v_cpu;
  const Tensor refilled = run_rung(v3, in, attrs);
  CHECK(ts::hopper::tensor_map_encodes() == encoded);
  check(in, refilled);

  // in.q's first batch read as a [1, S, H, D] tensor transposed to [1, H, S, D]: q's address, another
  // layout; k and v new tensors.
  Inputs viewed = make_inputs({1, sh.H, sh.S, sh.L}, D, DType::bf16, ++seed);
  viewed.q = in.q.narrow(0, 0, 1).reshape({1, sh.S, sh.H, D}).transpose(1, 2);
  REQUIRE(viewed.q.data_ptr() == in.q.data_ptr());
  viewed.q_cpu = viewed.q.to(ts::kCPU);
  const Tensor out = run_rung(v3, viewed, attrs);
  // At least q's new layout is encoded (k and v could meet maps an earlier case left at their addresses).
  CHECK(ts::hopper::tensor_map_encodes() > encoded);
  check(viewed, out);
}

// The maps go by value, so a captured graph holds its own: the maker's cache is 16 maps deep, and
// 20 new sets of three pass through it (each checked, the first one's maps encoded again after);
// a graph captured on the first inputs, replayed after all that on new values, reads them right.
TEST_CASE("cuda: flash_v3's maps: the cache refilled past 16, a captured graph keeps its own") {
  const Rung* rung = flash_v3_here();
  if (rung == nullptr) return;
  const Rung& v3 = *rung;
  uint64_t seed = fresh_seed();
  MESSAGE("seed base ", seed);
  const SdpaAttrs attrs{true, 0};
  const auto check = [&](const Inputs& inputs, const Tensor& got) { check_bf16_output(inputs, got, attrs, seed); };
  Inputs first = make_inputs({1, 2, 70, 70}, 64, DType::bf16, ++seed);
  check(first, run_rung(v3, first, attrs));  // eagerly first: the kernel is loaded outside the capture

  Tensor captured = poisoned_out(first.q);
  ts::cuda::Graph graph;
  {
    const ts::cuda::GraphCapture capture(graph);
    v3.run(first.q, first.k, first.v, attrs, captured);
  }
  const int64_t encoded = ts::hopper::tensor_map_encodes();
  for (int64_t i = 0; i < 20; ++i) {
    const Inputs other = make_inputs({1, 2, 71 + i, 71 + i}, 64, DType::bf16, ++seed);
    INFO("set ", i, ": S = L = ", 71 + i);
    check(other, run_rung(v3, other, attrs));
  }
  CHECK(ts::hopper::tensor_map_encodes() == encoded + 60);
  check(first, run_rung(v3, first, attrs));  // its maps were pushed out: encoded again
  CHECK(ts::hopper::tensor_map_encodes() == encoded + 63);

  const Inputs fresh = make_inputs({1, 2, 70, 70}, 64, DType::bf16, ++seed);
  ts::copy_(first.q, fresh.q);
  ts::copy_(first.k, fresh.k);
  ts::copy_(first.v, fresh.v);
  first.q_cpu = fresh.q_cpu, first.k_cpu = fresh.k_cpu, first.v_cpu = fresh.v_cpu;
  graph.replay();
  ts::cuda::synchronize();
  check(first, captured.to(ts::kCPU));
}

#else  // a build without the CUDA toolkit has no flash rungs to call
TEST_CASE("cuda: flash attention v1, v2, v3 (and v3's steps)") {
  MESSAGE("skipped: no usable CUDA device: ", ts::cuda::unavailable_reason());
}
#endif
