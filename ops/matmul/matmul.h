// ops/matmul/matmul.h: mm, bmm, addmm and the composites matmul and linear:
// their attributes, their OpDefs and the entry point of every kernel of their
// ladders (the ladder and its numbers: ops/matmul/README.md).
//
// Letters: out is M x N, the reduction runs over K, B counts batches.
#pragma once

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct AddmmAttrs {  // out = beta * c + alpha * (a @ b)
  double beta = 1, alpha = 1;
};

namespace ops {
extern const OpDef mm, bmm;     // NoAttrs; inputs: a, b
extern const OpDef addmm;       // AddmmAttrs; inputs: c, a, b
extern const OpDef matmul;      // NoAttrs; inputs: a, b (torch.matmul's rules)
extern const OpDef linear;      // NoAttrs; inputs: x, weight, bias (optional)
extern const OpDef linear_geglu;  // NoAttrs; inputs: x, weight [2*hidden, in] (the gate rows, then the up rows)
}  // namespace ops

// mm: a [M, K], b [K, N] (any strides); out [M, N] contiguous.
// bmm: a [B, M, K], b [B, K, N] (any strides, the batch stride too); out [B, M, N] contiguous.
void mm_cpu_ref(const Tensor& a, const Tensor& b, Tensor& out);
void mm_cpu_openblas(const Tensor& a, const Tensor& b, Tensor& out);
void mm_cuda_naive(const Tensor& a, const Tensor& b, Tensor& out);
void mm_cuda_tiled(const Tensor& a, const Tensor& b, Tensor& out);
void mm_cuda_mma(const Tensor& a, const Tensor& b, Tensor& out);
void mm_cuda_wgmma(const Tensor& a, const Tensor& b, Tensor& out);
void mm_cuda_cublas(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cpu_ref(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cpu_openblas(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cuda_naive(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cuda_tiled(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cuda_mma(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cuda_wgmma(const Tensor& a, const Tensor& b, Tensor& out);
void bmm_cuda_cublas(const Tensor& a, const Tensor& b, Tensor& out);
// addmm: c [N] (a bias row) or broadcastable to [M, N]; a [M, K], b [K, N]; out [M, N] contiguous.
void addmm_cpu_ref(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
void addmm_cpu_openblas(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
void addmm_cuda_naive(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
void addmm_cuda_tiled(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
void addmm_cuda_mma(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
void addmm_cuda_wgmma(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
void addmm_cuda_cublas(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out);
// mm, bmm, addmm: what each library or tensor-core rung takes (dtype, layouts, alignment, GPU).
bool gemm_cuda_mma_supports(const OpCall& call, std::string* why);
bool gemm_cuda_wgmma_supports(const OpCall& call, std::string* why);
bool gemm_cuda_cublas_supports(const OpCall& call, std::string* why);

// linear_geglu: x [*, in], weight [2H, in] -> out [*, H] = gelu_tanh(x W[:H]^T) * (x W[H:]^T).
// The composite is linear + geglu on the two halves of its output (the merged MLP path); the
// wgmma rung computes both halves of each output tile in one GEMM and writes only the product.
void linear_geglu_composite(const Tensor& x, const Tensor& weight, Tensor& out);
void linear_geglu_cuda_wgmma(const Tensor& x, const Tensor& weight, Tensor& out);  // out allocated by the caller
bool linear_geglu_cuda_wgmma_supports(const OpCall& call, std::string* why);

// The wgmma rung's two schedules of its consumer warpgroups (ops/matmul/README.md):
// cooperative, both on one 128 x 256 tile (their epilogues together, the tensor cores waiting),
// or pingpong, each on 128 x 128 tiles of its own in turn (one's epilogue under the other's
// multiplies). The rung picks one (`automatic`: cooperative, the faster where measured); while a
// WgmmaScheduleOverride lives, the wgmma calls of its thread take the schedule it names (tests,
// ts_bench's same-run comparisons).
enum class WgmmaSchedule { automatic, cooperative, pingpong };
class WgmmaScheduleOverride {
 public:
  explicit WgmmaScheduleOverride(WgmmaSchedule schedule);
  ~WgmmaScheduleOverride();
  WgmmaScheduleOverride(const WgmmaScheduleOverride&) = delete;
  WgmmaScheduleOverride& operator=(const WgmmaScheduleOverride&) = delete;

 private:
  WgmmaSchedule previous_;
};
WgmmaSchedule wgmma_schedule_override();  // this thread's: `automatic` when no override lives
const char* wgmma_schedule_name(WgmmaSchedule schedule);  // "automatic", "cooperative", "pingpong"

// Composites: matmul calls mm or bmm (with views around); linear calls t + addmm (or matmul [+ add]).
void matmul_composite(const Tensor& a, const Tensor& b, Tensor& out);
void linear_composite(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& out);

}  // namespace ts
