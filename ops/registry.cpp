// ops/registry.cpp: THE table of every op x device x variant, in ladder order.
//
// Read top to bottom, this is the syllabus: for each op, the reference
// oracle first (rung 0), then each faster rung with what it changes.
// Tests, benchmarks and tutorials enumerate this table; nothing else lists
// variants. Selection rules live in ops/dispatch.cpp.
#include "ops/registry.h"

#include <algorithm>
#include <array>
#include <vector>

#include "ops/variants.h"

namespace ts {

namespace {

using enum VariantDevice;

// clang-format off
const Variant kVariants[] = {
  // name                           op                     device rung summary                                                    supports               run                     cost
  // ---- factories and copies
  {"empty/any/alloc",               OpId::empty,           any,   0, "allocation only: the caching/aligned allocator, no kernel",      nullptr,               empty_alloc,            nullptr},
  {"fill_/cpu/ref",                 OpId::fill_,           cpu,   0, "one loop over the (strided) elements",                          nullptr,               fill_cpu_ref,           elementwise_cost},
  {"fill_/cuda/naive",              OpId::fill_,           cuda,  1, "one thread per element; strided views through OffsetCalc",      nullptr,               fill_cuda_naive,        elementwise_cost},
  {"copy_/cpu/ref",                 OpId::copy_,           cpu,   0, "strided read, dtype conversion, broadcast; host to host",       copy_cpu_ref_supports, copy_cpu_ref,           elementwise_cost},
  {"copy_/cuda/naive",              OpId::copy_,           cuda,  1, "cudaMemcpyAsync when dense and alike, else a strided convert kernel", copy_cuda_supports,    copy_cuda,              elementwise_cost},
  {"clone/any/composite",           OpId::clone,           any,   0, "empty_like + copy_",                                              nullptr,               clone_composite,        nullptr},
  {"contiguous/any/composite",      OpId::contiguous,      any,   0, "itself when already contiguous, else clone",                     nullptr,               contiguous_composite,   nullptr},
  {"to/any/composite",              OpId::to,              any,   0, "itself when nothing changes, else empty + copy_",                nullptr,               to_composite,           nullptr},
  {"arange/cpu/ref",                OpId::arange,          cpu,   0, "start + i*step",                                                  nullptr,               arange_cpu_ref,         nullptr},
  {"arange/cuda/naive",             OpId::arange,          cuda,  1, "one thread per element, start + i*step in double",              nullptr,               arange_cuda_naive,      nullptr},
  {"rand/cpu/ref",                  OpId::rand,            cpu,   0, "uniform [0,1) from the counter-based generator",                 nullptr,               rand_cpu_ref,           nullptr},
  {"rand/cuda/naive",               OpId::rand,            cuda,  1, "the CPU's splitmix64 counter hash, one thread per element",     nullptr,               rand_cuda_naive,        nullptr},
  {"randn/cpu/ref",                 OpId::randn,           cpu,   0, "standard normal (Box-Muller) from the counter-based generator",  nullptr,               randn_cpu_ref,          nullptr},
  {"randn/cuda/naive",              OpId::randn,           cuda,  1, "the CPU's Box-Muller on the same counters",                     nullptr,               randn_cuda_naive,       nullptr},
  // ---- views: metadata only, never a kernel
  {"t/any/view",                    OpId::t,               any,   0, "swap the two dims' sizes and strides",                           nullptr,               t_view,                 nullptr},
  {"transpose/any/view",            OpId::transpose,       any,   0, "swap two dims' sizes and strides",                               nullptr,               transpose_view,         nullptr},
  {"permute/any/view",              OpId::permute,         any,   0, "reorder sizes and strides",                                      nullptr,               permute_view,           nullptr},
  {"view/any/view",                 OpId::view,            any,   0, "new shape over the same strides, when they allow it",            nullptr,               view_view,              nullptr},
  {"reshape/any/composite",         OpId::reshape,         any,   0, "view when the strides allow, else contiguous copy + view",      nullptr,               reshape_composite,      nullptr},
  {"unsqueeze/any/view",            OpId::unsqueeze,       any,   0, "insert a size-1 dim",                                            nullptr,               unsqueeze_view,         nullptr},
  {"squeeze/any/view",              OpId::squeeze,         any,   0, "drop size-1 dims",                                               nullptr,               squeeze_view,           nullptr},
  {"expand/any/view",               OpId::expand,          any,   0, "size-1 dims grow with stride 0",                                 nullptr,               expand_view,            nullptr},
  {"narrow/any/view",               OpId::narrow,          any,   0, "offset + shorter size",                                          nullptr,               narrow_view,            nullptr},
  {"slice/any/view",                OpId::slice,           any,   0, "offset, shorter size, stride times step",                        nullptr,               slice_view,             nullptr},
  {"select/any/view",               OpId::select,          any,   0, "offset by index*stride, drop the dim",                           nullptr,               select_view,            nullptr},
  {"as_strided/any/view",           OpId::as_strided,      any,   0, "any sizes/strides/offset inside the storage",                    nullptr,               as_strided_view,        nullptr},
  // ---- elementwise
  {"add/cpu/ref",                   OpId::add,             cpu,   0, "broadcasting strided loop, computed in f32",                     nullptr,               add_cpu_ref,            elementwise_cost},
  {"add/cuda/naive",                OpId::add,             cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               add_cuda_naive,         elementwise_cost},
  {"sub/cpu/ref",                   OpId::sub,             cpu,   0, "broadcasting strided loop, computed in f32",                     nullptr,               sub_cpu_ref,            elementwise_cost},
  {"sub/cuda/naive",                OpId::sub,             cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               sub_cuda_naive,         elementwise_cost},
  {"mul/cpu/ref",                   OpId::mul,             cpu,   0, "broadcasting strided loop, computed in f32",                     nullptr,               mul_cpu_ref,            elementwise_cost},
  {"mul/cuda/naive",                OpId::mul,             cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               mul_cuda_naive,         elementwise_cost},
  {"div/cpu/ref",                   OpId::div,             cpu,   0, "broadcasting strided loop, computed in f32",                     nullptr,               div_cpu_ref,            elementwise_cost},
  {"div/cuda/naive",                OpId::div,             cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               div_cuda_naive,         elementwise_cost},
  {"neg/cpu/ref",                   OpId::neg,             cpu,   0, "strided loop",                                                   nullptr,               neg_cpu_ref,            elementwise_cost},
  {"neg/cuda/naive",                OpId::neg,             cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               neg_cuda_naive,         elementwise_cost},
  {"exp/cpu/ref",                   OpId::exp,             cpu,   0, "strided loop, std::exp in f32",                                  nullptr,               exp_cpu_ref,            elementwise_cost},
  {"exp/cuda/naive",                OpId::exp,             cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               exp_cuda_naive,         elementwise_cost},
  {"tanh/cpu/ref",                  OpId::tanh,            cpu,   0, "strided loop, std::tanh in f32",                                 nullptr,               tanh_cpu_ref,           elementwise_cost},
  {"tanh/cuda/naive",               OpId::tanh,            cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               tanh_cuda_naive,        elementwise_cost},
  {"gelu/cpu/ref",                  OpId::gelu,            cpu,   0, "strided loop; erf or tanh approximation in f32",                 nullptr,               gelu_cpu_ref,           elementwise_cost},
  {"gelu/cuda/naive",               OpId::gelu,            cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               gelu_cuda_naive,        elementwise_cost},
  {"relu/cpu/ref",                  OpId::relu,            cpu,   0, "strided loop",                                                   nullptr,               relu_cpu_ref,           elementwise_cost},
  {"relu/cuda/naive",               OpId::relu,            cuda,  1, "a thread per 16-byte pack when dense, else per strided element", nullptr,               relu_cuda_naive,        elementwise_cost},
  // ---- softmax, masking, selection
  {"softmax/cpu/ref",               OpId::softmax,         cpu,   0, "per row: max, sum of exp(x - max), divide (f32)",                nullptr,               softmax_cpu_ref,        softmax_cost},
  {"softmax/cuda/naive",            OpId::softmax,         cuda,  1, "a warp per row (<= 1024), else a block; shuffle reductions",    nullptr,               softmax_cuda_naive,     softmax_cost},
  {"_safe_softmax/cpu/ref",         OpId::_safe_softmax,   cpu,   0, "softmax, but an all -inf row gives 0 (not NaN)",                 nullptr,               safe_softmax_cpu_ref,   softmax_cost},
  {"_safe_softmax/cuda/naive",      OpId::_safe_softmax,   cuda,  1, "the softmax kernels; an all -inf row writes 0",                 nullptr,               safe_softmax_cuda_naive, softmax_cost},
  {"masked_fill/any/composite",     OpId::masked_fill,     any,   0, "clone + masked_fill_: the copy is the price of out-of-place",    nullptr,               masked_fill_composite,  nullptr},
  {"masked_fill_/cpu/ref",          OpId::masked_fill_,    cpu,   0, "in place: x = mask ? value : x, mask broadcast",                 nullptr,               masked_fill__cpu_ref,   elementwise_cost},
  {"masked_fill_/cuda/naive",       OpId::masked_fill_,    cuda,  1, "one thread per element, writes where the mask is true",         nullptr,               masked_fill__cuda_naive, elementwise_cost},
  {"where/cpu/ref",                 OpId::where,           cpu,   0, "cond ? a : b, all three broadcast",                              nullptr,               where_cpu_ref,          elementwise_cost},
  {"where/cuda/naive",              OpId::where,           cuda,  1, "one thread per element, three broadcast reads",                 nullptr,               where_cuda_naive,       elementwise_cost},
  {"triu/cpu/ref",                  OpId::triu,            cpu,   0, "keep j - i >= diagonal in the last two dims",                    nullptr,               triu_cpu_ref,           elementwise_cost},
  {"triu/cuda/naive",               OpId::triu,            cuda,  1, "one thread per element; (row, col) from the output index",      nullptr,               triu_cuda_naive,        elementwise_cost},
  {"tril/cpu/ref",                  OpId::tril,            cpu,   0, "keep j - i <= diagonal in the last two dims",                    nullptr,               tril_cpu_ref,           elementwise_cost},
  {"tril/cuda/naive",               OpId::tril,            cuda,  1, "one thread per element; (row, col) from the output index",      nullptr,               tril_cuda_naive,        elementwise_cost},
  // ---- reductions
  {"sum/cpu/ref",                   OpId::sum,             cpu,   0, "per output element: a strided loop over dim, f32 accumulator",   nullptr,               sum_cpu_ref,            reduce_cost},
  {"sum/cuda/naive",                OpId::sum,             cuda,  1, "a warp per output element, shuffle-reduced f32 partials",       nullptr,               sum_cuda_naive,         reduce_cost},
  {"max/cpu/ref",                   OpId::max,             cpu,   0, "per output element: running max and its first index",           nullptr,               max_cpu_ref,            reduce_cost},
  {"max/cuda/naive",                OpId::max,             cuda,  1, "a warp per output element; NaN wins, first index on ties",      nullptr,               max_cuda_naive,         reduce_cost},
  // ---- matrix products
  {"mm/cpu/ref",                    OpId::mm,              cpu,   0, "triple loop over strided operands, f32 accumulator: the oracle", nullptr,               mm_cpu_ref,             mm_cost},
  {"mm/cpu/openblas",               OpId::mm,              cpu,   1, "OpenBLAS sgemm; t() views read in place as transposed operands", nullptr,               mm_cpu_openblas,        mm_cost},
  {"mm/cuda/naive",                 OpId::mm,              cuda,  2, "one thread per output, a K loop over strided operands",         nullptr,               mm_cuda_naive,          mm_cost},
  {"mm/cuda/tiled",                 OpId::mm,              cuda,  3, "32x32 shared-memory tiles: each load reused 32 times",          nullptr,               mm_cuda_tiled,          mm_cost},
  {"mm/cuda/cublas",                OpId::mm,              cuda,  4, "cuBLASLt tensor cores; t() views read in place by layout",      gemm_cuda_cublas_supports, mm_cuda_cublas,         mm_cost},
  {"bmm/cpu/ref",                   OpId::bmm,             cpu,   0, "the mm triple loop per batch",                                   nullptr,               bmm_cpu_ref,            bmm_cost},
  {"bmm/cpu/openblas",              OpId::bmm,             cpu,   1, "OpenBLAS sgemm per batch",                                       nullptr,               bmm_cpu_openblas,       bmm_cost},
  {"bmm/cuda/naive",                OpId::bmm,             cuda,  2, "one thread per output, a K loop over strided operands",         nullptr,               bmm_cuda_naive,         bmm_cost},
  {"bmm/cuda/tiled",                OpId::bmm,             cuda,  3, "32x32 shared-memory tiles: each load reused 32 times",          nullptr,               bmm_cuda_tiled,         bmm_cost},
  {"bmm/cuda/cublas",               OpId::bmm,             cuda,  4, "cuBLASLt tensor cores; t() views read in place by layout",      gemm_cuda_cublas_supports, bmm_cuda_cublas,        bmm_cost},
  {"matmul/any/composite",          OpId::matmul,          any,   0, "torch.matmul's rules: mm for 2-D, bmm over broadcast batches",   nullptr,               matmul_composite,       nullptr},
  {"addmm/cpu/ref",                 OpId::addmm,           cpu,   0, "beta*C + alpha*(A@B), one triple loop",                          nullptr,               addmm_cpu_ref,          addmm_cost},
  {"addmm/cpu/openblas",            OpId::addmm,           cpu,   1, "C broadcast into out, then sgemm with beta: one pass",          nullptr,               addmm_cpu_openblas,     addmm_cost},
  {"addmm/cuda/naive",              OpId::addmm,           cuda,  2, "one thread per output, a K loop over strided operands",         nullptr,               addmm_cuda_naive,       addmm_cost},
  {"addmm/cuda/tiled",              OpId::addmm,           cuda,  3, "32x32 shared-memory tiles: each load reused 32 times",          nullptr,               addmm_cuda_tiled,       addmm_cost},
  {"addmm/cuda/cublas",             OpId::addmm,           cuda,  4, "cuBLASLt; t() read in place; bias epilogue, C as beta=1",       gemm_cuda_cublas_supports, addmm_cuda_cublas,      addmm_cost},
  {"linear/any/composite",          OpId::linear,          any,   0, "t(W) view + addmm (bias) or matmul (no bias)",                   nullptr,               linear_composite,       nullptr},
  // ---- fused elementwise
  {"geglu/cpu/ref",                 OpId::geglu,           cpu,   0, "gelu_tanh(gate) * up in one strided loop, f32",                  nullptr,               geglu_cpu_ref,          geglu_cost},
  {"geglu/cuda/fused",              OpId::geglu,           cuda,  1, "one pass, 16-byte packs: the gelu result never touches memory",  nullptr,               geglu_cuda_fused,       geglu_cost},
  // ---- attention
  {"scaled_dot_product_attention/any/math", OpId::scaled_dot_product_attention, any, 0,
                                                                     "matmul, scale, mask, safe softmax, matmul: the [S, L] scores in memory", nullptr,  sdpa_math_composite,    sdpa_cost},
};
// clang-format on

// Per (op, device type): the variants that can run there, highest rung first.
struct Index {
  std::array<std::array<std::vector<const Variant*>, kDeviceTypes>, kNumOps> by_op_device;
  Index() {
    for (const Variant& v : kVariants)
      for (int d = 0; d < kDeviceTypes; ++d)
        if (v.runs_on(static_cast<DeviceType>(d))) by_op_device[static_cast<int>(v.op)][d].push_back(&v);
    for (auto& per_op : by_op_device)
      for (auto& list : per_op)
        std::stable_sort(list.begin(), list.end(), [](const Variant* a, const Variant* b) { return a->rung > b->rung; });
  }
};

const Index& index() {
  static const Index instance;
  return instance;
}

}  // namespace

std::span<const Variant> all_variants() { return kVariants; }

const Variant* find_variant(std::string_view name) {
  for (const Variant& v : kVariants)
    if (name == v.name) return &v;
  return nullptr;
}

std::span<const Variant* const> variants_for(OpId op, DeviceType device) {
  return index().by_op_device[static_cast<int>(op)][static_cast<int>(device)];
}

const char* variant_device_name(VariantDevice device) {
  switch (device) {
    case VariantDevice::cpu: return "cpu";
    case VariantDevice::cuda: return "cuda";
    case VariantDevice::any: return "any";
  }
  return "?";
}

}  // namespace ts
