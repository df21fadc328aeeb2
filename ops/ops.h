// ops/ops.h: every public op, one line each, with PyTorch's semantics.
//
// Each op passes through ts::dispatch (ops/dispatch.h): a profiler scope
// named "ts::<op>", input checks that throw ts::Error naming the op and the
// shapes, the choice of a kernel variant, the call. Composite ops call the
// ops they are made of, so the profiler shows the same nesting as PyTorch:
//   matmul -> mm (2-D) or bmm (batched);  linear -> t + addmm;
//   masked_fill -> clone + masked_fill_;  contiguous -> clone -> empty + copy_.
// The trailing `loc` parameter captures the caller's file and line for the
// profiler's with_stack; never pass it by hand.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ts {

// ---- factories -------------------------------------------------------------
Tensor empty(const Dims& shape, Options options = {}, Where loc = Where::current());
Tensor zeros(const Dims& shape, Options options = {}, Where loc = Where::current());
Tensor ones(const Dims& shape, Options options = {}, Where loc = Where::current());
Tensor full(const Dims& shape, double value, Options options = {}, Where loc = Where::current());
Tensor empty_like(const Tensor& x, Where loc = Where::current());
Tensor zeros_like(const Tensor& x, Where loc = Where::current());
// [start, end) with step, like torch.arange, converted once to the dtype (f32 unless options say
// otherwise). Floating bounds: start + i * step computed in double. Integer bounds (arange(n),
// arange(a, b, 2)): computed in int64, exact at any magnitude, as PyTorch's integer arange.
Tensor arange(double start, double end, double step = 1, Options options = {}, Where loc = Where::current());
Tensor arange(double end, Options options = {}, Where loc = Where::current());
template <typename I>
concept Integer = std::integral<I> && !std::same_as<I, bool>;
template <Integer A, Integer B, Integer C = int64_t>
Tensor arange(A start, B end, C step = 1, Options options = {}, Where loc = Where::current());
template <Integer I>
Tensor arange(I end, Options options = {}, Where loc = Where::current());
// Uniform [0, 1) and standard normal values from the global generator (ts::manual_seed).
Tensor rand(const Dims& shape, Options options = {}, Where loc = Where::current());
Tensor randn(const Dims& shape, Options options = {}, Where loc = Where::current());
// Seeds the global generator: the same seed gives the same values on every device.
void manual_seed(uint64_t seed);

// Tensors from C++ values (stored as f32 unless options say otherwise).
Tensor tensor(std::initializer_list<double> values, Options options = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> values, Options options = {});
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<double>>> values,
              Options options = {});
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Dims& shape, Options options = {});

// ---- copies ------------------------------------------------------------------
Tensor& fill_(Tensor& x, double value, Where loc = Where::current());
// dst[...] = src broadcast to dst's shape, converting dtype and device.
Tensor& copy_(Tensor& dst, const Tensor& src, Where loc = Where::current());
Tensor clone(const Tensor& x, Where loc = Where::current());
Tensor contiguous(const Tensor& x, Where loc = Where::current());
Tensor to(const Tensor& x, DType dtype, Where loc = Where::current());
Tensor to(const Tensor& x, Device device, Where loc = Where::current());

// ---- views: same storage, new shape/strides/offset ------------------------------
Tensor t(const Tensor& x, Where loc = Where::current());  // <= 2-D: swap the two dims
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Where loc = Where::current());
Tensor permute(const Tensor& x, const Dims& dims, Where loc = Where::current());
Tensor view(const Tensor& x, const Dims& shape, Where loc = Where::current());     // one -1 allowed
Tensor reshape(const Tensor& x, const Dims& shape, Where loc = Where::current());  // view if possible, else copy
Tensor unsqueeze(const Tensor& x, int64_t dim, Where loc = Where::current());
Tensor squeeze(const Tensor& x, Where loc = Where::current());  // every size-1 dim
Tensor squeeze(const Tensor& x, int64_t dim, Where loc = Where::current());
Tensor expand(const Tensor& x, const Dims& shape, Where loc = Where::current());  // -1 keeps a size
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Where loc = Where::current());
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1,
             Where loc = Where::current());
Tensor select(const Tensor& x, int64_t dim, int64_t index, Where loc = Where::current());
Tensor as_strided(const Tensor& x, const Dims& shape, const Dims& strides, int64_t offset,
                  Where loc = Where::current());

// ---- elementwise (broadcasting; f32, bf16, f16; computed in f32) -----------------
enum class GeluApprox : uint8_t { none, tanh };
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1, Where loc = Where::current());  // a + alpha*b
Tensor add(const Tensor& a, double b, Where loc = Where::current());
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1, Where loc = Where::current());  // a - alpha*b
Tensor sub(const Tensor& a, double b, Where loc = Where::current());
Tensor mul(const Tensor& a, const Tensor& b, Where loc = Where::current());
Tensor mul(const Tensor& a, double b, Where loc = Where::current());
Tensor div(const Tensor& a, const Tensor& b, Where loc = Where::current());
Tensor div(const Tensor& a, double b, Where loc = Where::current());
Tensor neg(const Tensor& x, Where loc = Where::current());
Tensor exp(const Tensor& x, Where loc = Where::current());
Tensor tanh(const Tensor& x, Where loc = Where::current());
// approximate: none (0.5 x (1 + erf(x/sqrt2))) or tanh (0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))).
Tensor gelu(const Tensor& x, GeluApprox approximate = GeluApprox::none, Where loc = Where::current());
Tensor relu(const Tensor& x, Where loc = Where::current());

// ---- softmax, masking, selection ---------------------------------------------------
Tensor softmax(const Tensor& x, int64_t dim, Where loc = Where::current());
// Like softmax, but a row that is entirely -inf gives 0 instead of NaN.
Tensor _safe_softmax(const Tensor& x, int64_t dim, Where loc = Where::current());
// Out of place: clone(x), then masked_fill_ on the copy (the copy shows in the profile).
// x and mask broadcast together, as in PyTorch: the result may be larger than x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Where loc = Where::current());
// In place: x[mask] = value; mask is bool, broadcastable to x.
Tensor& masked_fill_(Tensor& x, const Tensor& mask, double value, Where loc = Where::current());
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where loc = Where::current());
// Keep elements on and above (triu) / on and below (tril) the diagonal of the last two dims.
Tensor triu(const Tensor& x, int64_t diagonal = 0, Where loc = Where::current());
Tensor tril(const Tensor& x, int64_t diagonal = 0, Where loc = Where::current());

// ---- reductions ------------------------------------------------------------------------
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false, Where loc = Where::current());
// Values and (int64) indices of the maximum along dim; the first index wins ties.
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false, Where loc = Where::current());

// ---- matrix products (M, N, K: out is MxN, the reduction is over K) -------------------
Tensor mm(const Tensor& a, const Tensor& b, Where loc = Where::current());   // [M,K] @ [K,N]
Tensor bmm(const Tensor& a, const Tensor& b, Where loc = Where::current());  // [B,M,K] @ [B,K,N]
// torch.matmul: 1-D operands are promoted, batch dims broadcast; 2-D -> mm, batched -> bmm.
Tensor matmul(const Tensor& a, const Tensor& b, Where loc = Where::current());
// beta*c + alpha*(a @ b); c is [N] (a bias row) or broadcastable to [M,N].
Tensor addmm(const Tensor& c, const Tensor& a, const Tensor& b, double beta = 1, double alpha = 1,
             Where loc = Where::current());
// x W^T + bias: x [*, in], weight [out, in], bias [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Where loc = Where::current());
// gelu_tanh(x W[:H]^T) * (x W[H:]^T): x [*, in], weight [2H, in] (the gate rows, then the up rows) -> [*, H].
// On Hopper one GEMM kernel with the GeGLU in its epilogue; elsewhere linear + geglu.
Tensor linear_geglu(const Tensor& x, const Tensor& weight, Where loc = Where::current());

namespace cuda {
// Lets f32 GEMMs on CUDA use TF32 tensor cores (inputs rounded to a 10-bit
// mantissa: ~1e-3 relative error, several times faster). Off by default, like
// torch.backends.cuda.matmul.allow_tf32; TS_ALLOW_TF32=1 turns it on at start.
void set_allow_tf32(bool allow);
bool allow_tf32();
}  // namespace cuda

// ---- fused elementwise ---------------------------------------------------------------------
// gelu_tanh(gate) * up in one pass (the GeGLU MLP's middle); gate and up [*, H], equal shapes, any strides.
Tensor geglu(const Tensor& gate, const Tensor& up, Where loc = Where::current());

// ---- attention -----------------------------------------------------------------------------
// softmax(q k^T * scale + mask) v; q [*, S, D], k [*, L, D], v [*, L, Dv].
// attn_mask: bool (true = keep) or float (added), broadcastable to [*, S, L]; undefined for none.
// scale 0 means 1/sqrt(D). Fully masked rows give 0 (safe softmax), as PyTorch's math path does.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = {},
                                    bool is_causal = false, double scale = 0, Where loc = Where::current());

// ---- the integer arange: every bound widened to int64 (a size_t past INT64_MAX is refused) ----
namespace detail {
Tensor arange_int64(int64_t start, int64_t end, int64_t step, Options options, Where loc);
[[noreturn]] void arange_bound_past_int64(uint64_t bound);
template <Integer I>
int64_t arange_bound(I bound) {
  if (!std::in_range<int64_t>(bound)) arange_bound_past_int64(static_cast<uint64_t>(bound));
  return static_cast<int64_t>(bound);
}
}  // namespace detail

template <Integer A, Integer B, Integer C>
Tensor arange(A start, B end, C step, Options options, Where loc) {
  return detail::arange_int64(detail::arange_bound(start), detail::arange_bound(end), detail::arange_bound(step),
                              options, loc);
}
template <Integer I>
Tensor arange(I end, Options options, Where loc) {
  return detail::arange_int64(0, detail::arange_bound(end), 1, options, loc);
}

}  // namespace ts
