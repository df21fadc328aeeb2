// ops/matmul/matmul_cuda_cublas.cpp: rung 4 of mm, bmm and addmm on CUDA: cuBLASLt.
//
// What changed from rung 3 (matmul_cuda_tiled.cu): NVIDIA's library GEMM,
//        which on Hopper runs wgmma tensor-core kernels (bf16/f16 inputs, f32
//        accumulation; f32 inputs in full f32 unless TF32 is allowed).
//   Layout, not copies. cuBLAS is column-major; our tensors are row-major. A
//        row-major [M, N] out is a column-major [N, M] matrix, so we ask for
//        out^T = B^T A^T. A row-major operand read column-major already IS its
//        transpose (op N); a t() view (column-major) is read with op T. Only
//        operands with other strides (a stepped slice, a broadcast) are copied.
//        The chosen ops show in the kernel's name in a trace (..._tn_..., _nt_...).
//   addmm is one GEMM. A bias row c [N] rides in the epilogue
//        (CUBLASLT_EPILOGUE_BIAS): D = alpha*A@B + bias, no second kernel. A full
//        matrix c [M, N] is cuBLASLt's C with beta, read from its own buffer
//        while D is written to the separate output: no device-to-device copy of
//        C first (PyTorch's compiled path pays one).
//   Cold start once. The handle and a 32 MiB workspace are created at the first
//        GEMM on a device/stream, and each problem's descriptors and chosen
//        algorithm (the heuristic query) are cached, so a warm call is one
//        cublasLtMatmul.
// Cost:  2*M*N*K FLOPs at ~760-800 TFLOP/s for 8192^3 bf16 on an H200.
// Try:   ./build/dev/ts_bench --filter gemm
#include <cublasLt.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "ops/checks.h"
#include "ops/ops.h"
#include "ops/matmul/matmul.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_device.h"

namespace ts {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;  // what cuBLAS asks for on Hopper for its fastest kernels

// ---- handle and workspace, one per (device, stream), created lazily -------------------

struct LtContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

// A CUDA graph's capture uses the default stream's context: the graph replays on that stream, in
// order with the eager GEMMs that share the workspace. Made during a capture, it is made with the
// capture's checks relaxed (cudaMalloc is not a stream operation: the workspace outlives the graph).
LtContext& lt_context(int device, cudaStream_t stream) {
  static std::mutex mutex;
  static auto* contexts = new std::map<std::pair<int, uintptr_t>, LtContext>();  // never freed: see cuda_allocator.cpp
  if (cuda::capturing()) stream = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  LtContext& ctx = (*contexts)[{device, reinterpret_cast<uintptr_t>(stream)}];
  if (ctx.handle == nullptr) {  // the cold start: visible once in a trace
    const cuda::RelaxedCapture relaxed;
    TS_CUBLAS_CHECK(cublasLtCreate(&ctx.handle));
    TS_CUDA_CHECK(cudaMalloc(&ctx.workspace, kWorkspaceBytes));
  }
  return ctx;
}

// ---- operands in cuBLAS's column-major terms --------------------------------------------

// A stored column-major matrix (rows x cols, leading dimension ld) and the op
// that turns it into the transpose of the row-major tensor it came from.
struct LtOperand {
  const void* ptr = nullptr;
  cublasOperation_t op = CUBLAS_OP_N;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// x is [R, C] (or [B, R, C]); returns op(stored) = x^T, or false when x's strides
// are neither row-major nor column-major.
bool transposed_operand(const Tensor& x, LtOperand& out) {
  const int o = x.dim() - 2;
  const int64_t R = x.shape()[o], C = x.shape()[o + 1];
  const int64_t s0 = x.strides()[o], s1 = x.strides()[o + 1];
  out.ptr = x.data_ptr();
  out.batch_stride = x.dim() == 3 ? x.strides()[0] : 0;
  if ((s1 == 1 || C <= 1) && s0 >= std::max<int64_t>(C, 1)) {  // row-major: memory holds x^T column-major
    out.op = CUBLAS_OP_N;
    out.rows = static_cast<uint64_t>(C);
    out.cols = static_cast<uint64_t>(R);
    out.ld = s0;
    return true;
  }
  if ((s0 == 1 || R <= 1) && s1 >= std::max<int64_t>(R, 1)) {  // column-major (a t() view): memory holds x
    out.op = CUBLAS_OP_T;
    out.rows = static_cast<uint64_t>(R);
    out.cols = static_cast<uint64_t>(C);
    out.ld = s1;
    return true;
  }
  return false;
}

// The largest power of two (up to 256) that divides the address: cuBLASLt picks
// kernels by the alignment it is promised, and views with offsets promise less.
int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 256;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: fail("cuBLAS GEMM: unsupported dtype {}", dtype_short_name(dtype));
  }
}

// ---- plans: descriptors + chosen algorithm, cached per problem --------------------------

struct PlanKey {
  std::array<int64_t, 28> v{};
  bool operator==(const PlanKey& other) const { return v == other.v; }
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    for (auto* l : {a, b, c, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

// Everything one cublasLtMatmul needs. In cuBLAS's terms D [N x M] = alpha *
// op(A) op(B) + beta * C (+ bias), with A = our B^T source and B = our A^T source.
struct LtGemm {
  DType dtype = DType::f32;
  int64_t M = 0, N = 0, K = 0, batch = 1;
  LtOperand a, b;                     // cuBLAS's A (from our B) and B (from our A)
  const void* c = nullptr;            // beta * C: a row-major [M, N] matrix, or null
  int64_t ldc = 0, c_batch_stride = 0;
  const void* bias = nullptr;         // epilogue bias [N], or null
  void* d = nullptr;
  int64_t ldd = 0, d_batch_stride = 0;
  float alpha = 1, beta = 0;
};

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld, int64_t batch,
                                   int64_t batch_stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  TS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    TS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    TS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                     &batch_stride, sizeof(batch_stride)));
  }
  return layout;
}

std::unique_ptr<Plan> make_plan(const LtGemm& g, const LtContext& ctx, bool tf32, const char* variant) {
  auto plan = std::make_unique<Plan>();
  const cudaDataType_t type = cuda_data_type(g.dtype);
  const cublasComputeType_t compute =
      g.dtype == DType::f32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  TS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
  TS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &g.a.op, sizeof(g.a.op)));
  TS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &g.b.op, sizeof(g.b.op)));
  if (g.bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;  // D[n, m] += bias[n]: one bias per output column
    TS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    TS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  }
  plan->a = make_layout(type, g.a.rows, g.a.cols, g.a.ld, g.batch, g.a.batch_stride);
  plan->b = make_layout(type, g.b.rows, g.b.cols, g.b.ld, g.batch, g.b.batch_stride);
  plan->d = make_layout(type, static_cast<uint64_t>(g.N), static_cast<uint64_t>(g.M), g.ldd, g.batch, g.d_batch_stride);
  plan->c = g.c != nullptr ? make_layout(type, static_cast<uint64_t>(g.N), static_cast<uint64_t>(g.M), g.ldc, g.batch,
                                         g.c_batch_stride)
                           : nullptr;

  cublasLtMatmulPreference_t pref = nullptr;
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kWorkspaceBytes;
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                       sizeof(workspace)));
  const uint32_t align_a = static_cast<uint32_t>(alignment_of(g.a.ptr)), align_b = static_cast<uint32_t>(alignment_of(g.b.ptr));
  const uint32_t align_c = static_cast<uint32_t>(alignment_of(g.c != nullptr ? g.c : g.d));
  const uint32_t align_d = static_cast<uint32_t>(alignment_of(g.d));
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)));
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));

  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(ctx.handle, plan->desc, plan->a, plan->b, plan->c ? plan->c : plan->d, plan->d,
                                     pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  TS_CHECK(status == CUBLAS_STATUS_SUCCESS && found > 0,
           "{}: cuBLASLt has no algorithm for {} M={} N={} K={} batch={} (ops {}{}, ld {} {} {}, alignments {} {} {} "
           "{}{}): {}",
           variant, dtype_short_name(g.dtype), g.M, g.N, g.K, g.batch, g.a.op == CUBLAS_OP_N ? 'n' : 't',
           g.b.op == CUBLAS_OP_N ? 'n' : 't', g.a.ld, g.b.ld, g.ldd, align_a, align_b, align_c, align_d,
           g.bias ? ", bias epilogue" : "", cublasGetStatusName(status));
  plan->algo = result.algo;
  return plan;
}

PlanKey plan_key(const LtGemm& g, int device, bool tf32) {
  PlanKey k;
  k.v = {static_cast<int64_t>(g.dtype), g.M, g.N, g.K, g.batch,
         static_cast<int64_t>(g.a.op), static_cast<int64_t>(g.a.rows), static_cast<int64_t>(g.a.cols), g.a.ld, g.a.batch_stride,
         static_cast<int64_t>(g.b.op), static_cast<int64_t>(g.b.rows), static_cast<int64_t>(g.b.cols), g.b.ld, g.b.batch_stride,
         g.c != nullptr, g.ldc, g.c_batch_stride, g.bias != nullptr, g.ldd, g.d_batch_stride,
         alignment_of(g.a.ptr), alignment_of(g.b.ptr), g.c ? alignment_of(g.c) : 0, alignment_of(g.d),
         g.bias ? alignment_of(g.bias) : 0, device, tf32};
  return k;
}

void run_lt_gemm(const LtGemm& g, int device, const char* variant) {
  const cudaStream_t stream = cuda::current_stream();
  LtContext& ctx = lt_context(device, stream);
  const bool tf32 = cuda::allow_tf32();
  static std::mutex mutex;
  static auto* plans = new std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash>();
  std::lock_guard<std::mutex> lock(mutex);  // plans are shared, and the bias pointer is set per call
  std::unique_ptr<Plan>& plan = (*plans)[plan_key(g, device, tf32)];
  if (!plan) plan = make_plan(g, ctx, tf32, variant);  // first time for this problem: the heuristic query
  if (g.bias != nullptr)
    TS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  // Without C, cuBLASLt still wants a C: pass D with beta = 0 (it is never read).
  TS_CUBLAS_CHECK(cublasLtMatmul(ctx.handle, plan->desc, &g.alpha, g.a.ptr, plan->a, g.b.ptr, plan->b, &g.beta,
                                 g.c != nullptr ? g.c : g.d, plan->c ? plan->c : plan->d, g.d, plan->d, &plan->algo,
                                 ctx.workspace, kWorkspaceBytes, stream));
}

// Fills the operands of out = a @ b (2-D or 3-D), copying an operand to
// contiguous only when its strides fit neither layout. `keep` holds such copies.
void set_product(LtGemm& g, const Tensor& a, const Tensor& b, const Tensor& out, Tensor (&keep)[3]) {
  const int o = a.dim() - 2;
  g.dtype = out.dtype();
  g.batch = a.dim() == 3 ? a.shape()[0] : 1;
  g.M = a.shape()[o];
  g.K = a.shape()[o + 1];
  g.N = b.shape()[o + 1];
  if (!transposed_operand(b, g.a)) {  // e.g. a stepped slice: no column-major reading exists
    keep[0] = contiguous(b);
    transposed_operand(keep[0], g.a);
  }
  if (!transposed_operand(a, g.b)) {
    keep[1] = contiguous(a);
    transposed_operand(keep[1], g.b);
  }
  g.d = out.data_ptr();
  g.ldd = out.strides()[o];
  g.d_batch_stride = a.dim() == 3 ? out.strides()[0] : 0;
}

}  // namespace

bool gemm_cuda_cublas_supports(const OpCall& call, std::string* why) {
  const bool addmm = &call.op == &ops::addmm;  // inputs c, a, b; mm and bmm: a, b
  const Tensor& a = call.input(addmm ? 1 : 0);
  const Tensor& b = call.input(addmm ? 2 : 1);
  const int o = a.dim() - 2;
  const int64_t M = a.shape()[o], K = a.shape()[o + 1], N = b.shape()[o + 1];
  const int64_t batch = a.dim() == 3 ? a.shape()[0] : 1;
  if (M == 0 || N == 0 || K == 0 || batch == 0) {
    if (why) *why = fmt::format("an empty product (M={}, N={}, K={}, batch={}) is left to the hand-written rungs", M, N, K, batch);
    return false;
  }
  if (batch > INT32_MAX) {
    if (why) *why = fmt::format("batch {} exceeds cuBLASLt's int32 batch count", batch);
    return false;
  }
  return true;
}

// a [M, K], b [K, N] (any strides); out [M, N] contiguous.
void mm_cuda_cublas(const Tensor& a, const Tensor& b, Tensor& out) {
  LtGemm g;
  Tensor keep[3];
  set_product(g, a, b, out, keep);
  run_lt_gemm(g, out.device().index, "mm/cuda/cublas");
}

// a [B, M, K], b [B, K, N] (any strides, batch stride included); out [B, M, N] contiguous.
void bmm_cuda_cublas(const Tensor& a, const Tensor& b, Tensor& out) {
  LtGemm g;
  Tensor keep[3];
  set_product(g, a, b, out, keep);
  run_lt_gemm(g, out.device().index, "bmm/cuda/cublas");
}

// out [M, N] = beta * c + alpha * (a [M, K] @ b [K, N]); c [N], [1, N] or [M, N] (broadcastable).
void addmm_cuda_cublas(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  LtGemm g;
  Tensor keep[3];
  set_product(g, a, b, out, keep);
  g.alpha = static_cast<float>(attrs.alpha);
  const Dims out_shape = out.shape();
  if (attrs.beta != 0) {
    const Dims cs = broadcast_strides(c, out_shape);  // c's strides over [M, N], 0 where broadcast
    const bool bias_row = cs[0] == 0 && (cs[1] == 1 || g.N == 1);
    const bool full_row_major = (cs[1] == 1 || g.N == 1) && cs[0] >= g.N;
    if (bias_row && attrs.beta == 1) {         // linear's case: the bias epilogue
      g.bias = c.data_ptr();
    } else if (full_row_major) {              // C read in place, D written separately
      g.c = c.data_ptr();
      g.ldc = cs[0];
      g.beta = static_cast<float>(attrs.beta);
    } else {                                  // a column, a scalar, a transposed C: materialize [M, N] once
      keep[2] = contiguous(expand(c, out_shape));
      g.c = keep[2].data_ptr();
      g.ldc = g.N;
      g.beta = static_cast<float>(attrs.beta);
    }
  }
  run_lt_gemm(g, out.device().index, "addmm/cuda/cublas");
}

}  // namespace ts
