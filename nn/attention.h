// nn/attention.h: the attention of part 3, six ways: softmax(q k^T * scale + causal mask) v.
//
// Shapes: q [B, H, S, D], k and v [B, H, L, D] -> out [B, H, S, D] (the naive, inplace and math
// paths take any leading dims; the fused ones exactly four). S queries, L keys, D the head dim.
// Causal follows PyTorch's is_causal: query i sees keys j <= i (tril(ones(S, L)), top-left).
// The paths compute the same function; what they launch differs:
//
//   naive     matmul(q, k^T), mul(scale), masked_fill(scores, mask, -inf), softmax, matmul(p, v):
//             5 kernels and 1 copy. Out-of-place masked_fill is clone + masked_fill_: the clone's
//             copy_ of the [B, H, S, L] scores is a cudaMemcpyAsync (a "Memcpy DtoD" row), the
//             hidden copy of the series.
//   inplace   the same with masked_fill_ on the scores: 5 kernels, no copy.
//   math      ts::scaled_dot_product_attention with its math rung forced (like PyTorch's
//             sdpa_kernel(SDPBackend.MATH)): bf16/f16 inputs upcast to f32, the causal mask
//             rebuilt on every call, a safe softmax, the result cast back: 12 kernels for bf16.
//   flash_v1  ts::scaled_dot_product_attention with the flash_v1 rung forced: 1 kernel, the
//   flash_v2  [S, L] scores never in memory (flash_v2 on tensor cores, flash_v3 on Hopper's
//   flash_v3  wgmma and TMA). CUDA only; flash_v3 on a compute capability 9.0 GPU only.
//
// The naive paths take the causal mask from outside (built once, as the series builds it before
// profiling): CausalSelfAttention builds it at construction, sized for its longest sequence, and
// forward narrows it to [S, L] (views). nn/ composes ops; it never contains a kernel.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nn/module.h"

namespace ts::nn {

enum class AttentionPath { naive, inplace, math, flash_v1, flash_v2, flash_v3 };
// "naive" | "inplace" | "math" | "flash_v1" | "flash_v2" | "flash_v3"; throws ts::Error otherwise.
AttentionPath parse_attention_path(std::string_view name);
const char* attention_path_name(AttentionPath path);
// flash_v1, flash_v2 and flash_v3: one fused kernel, CUDA only.
constexpr bool is_fused(AttentionPath path) {
  return path == AttentionPath::flash_v1 || path == AttentionPath::flash_v2 || path == AttentionPath::flash_v3;
}
// The sdpa rung a path forces, the one whose name ends in the path's name
// ("scaled_dot_product_attention/cuda/flash_v2"); nullptr for naive and inplace.
const char* attention_variant_name(AttentionPath path);

// [S, L] bool, true where key j lies in query i's future (j > i): the positions masked_fill sets to -inf.
Tensor causal_future_mask(int64_t S, int64_t L, Device device);

// The paths as free functions. future_mask: [S, L] bool from causal_future_mask (or any bool mask
// broadcastable to the scores, true = masked out), undefined for no mask.
Tensor attention_naive(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& future_mask);
Tensor attention_inplace(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& future_mask);
// path: math, flash_v1, flash_v2 or flash_v3. A fused path whose rung cannot run the call (a CPU
// tensor, f32, a head dim flash_v2 lacks, a GPU that is not compute capability 9.0 for flash_v3)
// throws a ts::Error with the rung's reason: no silent fallback.
Tensor attention_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, AttentionPath path);
// Empty when `path` can run q, k, v (shapes, dtype, device); otherwise why not, in the rung's words
// (dispatch asks the forced rung without running the call: VariantOverride::refusal).
std::string attention_path_refusal(AttentionPath path, const Tensor& q, const Tensor& k, const Tensor& v, bool causal);

// One forward's work on a GPU, op by op: what tutorial 04 prints before it profiles and counts
// after, and what the tests assert. `op` is the innermost ts:: op the GPU work is charged to.
struct ExpectedLaunch {
  const char* op;    // "ts::bmm"
  int kernels;       // kernel launches charged to it
  int memcpys;       // cudaMemcpyAsync copies charged to it (a Memcpy row, not a kernel)
  std::string what;  // one line: what the launch computes
};
std::vector<ExpectedLaunch> expected_launches(AttentionPath path, bool causal, DType dtype);
// Totals over expected_launches.
int expected_kernels(AttentionPath path, bool causal, DType dtype);
int expected_memcpys(AttentionPath path, bool causal, DType dtype);

class CausalSelfAttention : public Module {
 public:
  // max_seq: the longest S and L forward will see; the naive paths' [max_seq, max_seq] mask is
  // built here, on `device`, once. causal = false drops the mask (every query sees every key).
  CausalSelfAttention(AttentionPath path, int64_t max_seq, Device device, bool causal = true,
                      std::string name = "attn_fwd");

  // q [B, H, S, D], k and v [B, H, L, D] with S, L <= max_seq -> [B, H, S, D], in a profiler scope
  // named after the module.
  Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v) const;

  AttentionPath path() const { return path_; }
  bool causal() const { return causal_; }
  const Tensor& future_mask() const { return future_mask_; }  // undefined unless naive or inplace, and causal

 private:
  AttentionPath path_;
  int64_t max_seq_;
  bool causal_;
  Tensor future_mask_;
};

}  // namespace ts::nn
