// nn/attention.cpp: the six attention paths of part 3.
#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "profiler/profiler.h"
#include "tensor/cuda_device.h"

namespace ts::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The op the math and fused paths force a rung of; the rung is named by the path (flash_v1 forces
// the rung whose name ends in flash_v1: the registry spells the full names).
constexpr const char* kSdpa = "scaled_dot_product_attention";

bool is_sdpa_path(AttentionPath path) { return path != AttentionPath::naive && path != AttentionPath::inplace; }

// scores = q k^T * scale: one GEMM (k^T is a view, read in place), one elementwise pass over the scores.
Tensor scaled_scores(const Tensor& q, const Tensor& k) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.shape().back()));
  return mul(matmul(q, transpose(k, -2, -1)), scale);
}

void check_qkv(const char* where, const Tensor& q, const Tensor& k, const Tensor& v) {
  TS_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2 && q.shape().back() == k.shape().back() &&
               k.shape()[k.dim() - 2] == v.shape()[v.dim() - 2],
           "{}: expected q [*, S, D], k [*, L, D], v [*, L, Dv], got q {}, k {}, v {}", where, q.shape(), k.shape(),
           v.shape());
}

}  // namespace

AttentionPath parse_attention_path(std::string_view name) {
  if (name == "naive") return AttentionPath::naive;
  if (name == "inplace") return AttentionPath::inplace;
  if (name == "math") return AttentionPath::math;
  if (name == "flash_v1") return AttentionPath::flash_v1;
  if (name == "flash_v2") return AttentionPath::flash_v2;
  if (name == "flash_v3") return AttentionPath::flash_v3;
  fail("attention: unknown path '{}' (expected naive, inplace, math, flash_v1, flash_v2 or flash_v3)", name);
}

const char* attention_path_name(AttentionPath path) {
  switch (path) {
    case AttentionPath::naive: return "naive";
    case AttentionPath::inplace: return "inplace";
    case AttentionPath::math: return "math";
    case AttentionPath::flash_v1: return "flash_v1";
    case AttentionPath::flash_v2: return "flash_v2";
    case AttentionPath::flash_v3: return "flash_v3";
  }
  return "?";
}

const char* attention_variant_name(AttentionPath path) {
  if (!is_sdpa_path(path)) return nullptr;
  if (const Variant* v = find_rung(kSdpa, attention_path_name(path))) return v->name;
  // A build without the CUDA toolkit registers no fused rung: the name it has where it is built
  // (the fused paths are CUDA only; math, on device any, is always registered).
  static const std::string absent[] = {fmt::format("{}/cuda/{}", kSdpa, attention_path_name(AttentionPath::flash_v1)),
                                       fmt::format("{}/cuda/{}", kSdpa, attention_path_name(AttentionPath::flash_v2)),
                                       fmt::format("{}/cuda/{}", kSdpa, attention_path_name(AttentionPath::flash_v3))};
  return absent[static_cast<int>(path) - static_cast<int>(AttentionPath::flash_v1)].c_str();
}

Tensor causal_future_mask(int64_t S, int64_t L, Device device) {
  return triu(ones({S, L}, {DType::b8, device}), 1);
}

Tensor attention_naive(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& future_mask) {
  check_qkv("attention naive", q, k, v);
  Tensor scores = scaled_scores(q, k);
  // Out of place: a fresh [*, S, L] tensor, so masked_fill first copies the scores (clone), then fills the copy.
  if (future_mask.defined()) scores = masked_fill(scores, future_mask, kNegInf);
  return matmul(softmax(scores, -1), v);
}

Tensor attention_inplace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& future_mask) {
  check_qkv("attention inplace", q, k, v);
  Tensor scores = scaled_scores(q, k);
  // The scores are ours to overwrite: fill the masked positions where they are, no copy.
  if (future_mask.defined()) masked_fill_(scores, future_mask, kNegInf);
  return matmul(softmax(scores, -1), v);
}

std::string attention_path_refusal(AttentionPath path, const Tensor& q, const Tensor& k, const Tensor& v,
                                   bool causal) {
  if (!is_sdpa_path(path)) return {};  // naive and inplace: plain ops, which run anywhere
  if (find_rung(kSdpa, attention_path_name(path)) == nullptr)  // a build without CUDA has no fused rung
    return fmt::format("{} is not in this build: {}", attention_variant_name(path), cuda::unavailable_reason());
  // Dispatch answers, in the rung's words, without running the call.
  const VariantOverride use(kSdpa, attention_path_name(path));
  return use.refusal([&] { scaled_dot_product_attention(q, k, v, {}, causal); });
}

Tensor attention_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, AttentionPath path) {
  TS_CHECK(is_sdpa_path(path), "attention_sdpa: path {} is not an sdpa rung (math, flash_v1, flash_v2 or flash_v3)",
           attention_path_name(path));
  // Forced: a call the rung cannot run (a CPU tensor for a fused rung, a head dim it lacks) throws
  // the rung's reason from dispatch; it never quietly takes another rung.
  const VariantOverride use(kSdpa, attention_path_name(path));
  return scaled_dot_product_attention(q, k, v, {}, causal);
}

std::vector<ExpectedLaunch> expected_launches(AttentionPath path, bool causal, DType dtype) {
  std::vector<ExpectedLaunch> l;
  switch (path) {
    case AttentionPath::naive:
    case AttentionPath::inplace:
      l.push_back({"ts::bmm", 1, 0, "scores = q @ k^T (one GEMM over B*H batches; k^T is a view)"});
      l.push_back({"ts::mul", 1, 0, "scores * scale, a pass over the [B, H, S, L] scores"});
      if (causal && path == AttentionPath::naive)
        l.push_back({"ts::copy_", 0, 1, "masked_fill's clone: a device-to-device copy of the scores"});
      if (causal) l.push_back({"ts::masked_fill_", 1, 0, "-inf where the mask is true (key in the query's future)"});
      l.push_back({"ts::softmax", 1, 0, "softmax over the last dim"});
      l.push_back({"ts::bmm", 1, 0, "out = p @ v"});
      break;
    case AttentionPath::math: {
      const bool upcast = dtype == DType::bf16 || dtype == DType::f16;
      if (upcast) l.push_back({"ts::copy_", 3, 0, "q, k, v cast to f32 (ts::to)"});
      l.push_back({"ts::mul", 2, 0, "q and k each times sqrt(scale), before the product"});
      l.push_back({"ts::bmm", 1, 0, upcast ? "scores = q @ k^T in f32" : "scores = q @ k^T"});
      if (causal) {
        l.push_back({"ts::fill_", 1, 0, "ones(S, L): the mask, rebuilt on every call"});
        l.push_back({"ts::triu", 1, 0, "triu(ones, 1): the future keys"});
        l.push_back({"ts::masked_fill_", 1, 0, "-inf on the future keys, in place"});
      }
      l.push_back({"ts::_safe_softmax", 1, 0, "softmax that writes 0, not NaN, for a row with no key"});
      l.push_back({"ts::bmm", 1, 0, upcast ? "out = p @ v in f32" : "out = p @ v"});
      if (upcast) l.push_back({"ts::copy_", 1, 0, "out cast back to the input dtype"});
      break;
    }
    case AttentionPath::flash_v1:
    case AttentionPath::flash_v2:
    case AttentionPath::flash_v3:
      l.push_back({"ts::scaled_dot_product_attention", 1, 0, "the fused kernel: scores only in registers and shared memory"});
      break;
  }
  return l;
}

int expected_kernels(AttentionPath path, bool causal, DType dtype) {
  int n = 0;
  for (const ExpectedLaunch& e : expected_launches(path, causal, dtype)) n += e.kernels;
  return n;
}

int expected_memcpys(AttentionPath path, bool causal, DType dtype) {
  int n = 0;
  for (const ExpectedLaunch& e : expected_launches(path, causal, dtype)) n += e.memcpys;
  return n;
}

CausalSelfAttention::CausalSelfAttention(AttentionPath path, int64_t max_seq, Device device, bool causal,
                                         std::string name)
    : Module(std::move(name)), path_(path), max_seq_(max_seq), causal_(causal) {
  TS_CHECK(max_seq > 0, "CausalSelfAttention: max_seq must be positive, got {}", max_seq);
  const bool takes_mask = path == AttentionPath::naive || path == AttentionPath::inplace;
  if (takes_mask && causal) future_mask_ = causal_future_mask(max_seq, max_seq, device);
}

Tensor CausalSelfAttention::forward(const Tensor& q, const Tensor& k, const Tensor& v) const {
  profiler::RecordFunction scope(name());
  check_qkv(name().c_str(), q, k, v);
  const int64_t S = q.shape()[q.dim() - 2], L = k.shape()[k.dim() - 2];
  TS_CHECK(S <= max_seq_ && L <= max_seq_,
           "{}: sequence lengths S={} and L={} exceed max_seq={} (the mask was built for max_seq)", name(), S, L,
           max_seq_);
  switch (path_) {
    case AttentionPath::naive:
    case AttentionPath::inplace: {
      Tensor mask;
      if (future_mask_.defined()) {
        // The [max_seq, max_seq] mask's top-left [S, L] corner: a view, nothing copied.
        mask = S == max_seq_ && L == max_seq_ ? future_mask_ : narrow(narrow(future_mask_, 0, 0, S), 1, 0, L);
      }
      return path_ == AttentionPath::naive ? attention_naive(q, k, v, mask) : attention_inplace(q, k, v, mask);
    }
    case AttentionPath::math:
    case AttentionPath::flash_v1:
    case AttentionPath::flash_v2:
    case AttentionPath::flash_v3:
      return attention_sdpa(q, k, v, causal_, path_);
  }
  return {};
}

}  // namespace ts::nn
