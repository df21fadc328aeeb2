// ops/masking/masking.cpp: front end of masked_fill, masked_fill_, where, triu, tril.
//
// masked_fill is out of place: it clones its input, then runs masked_fill_
// on the copy. That clone is the "hidden copy" kernel the attention lesson
// finds in the trace; calling masked_fill_ directly removes it.
#include "ops/masking/masking.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ts {

namespace {

// The shape x and mask broadcast to; the mask must be bool.
Dims check_mask(const OpCall& call, const Tensor& x, const Tensor& mask) {
  TS_CHECK(mask.dtype() == DType::b8, "{}: expected a bool mask, got {} (mask shape {})", call.op.name,
           dtype_short_name(mask.dtype()), mask.shape());
  return broadcast_shapes(call, x.shape(), mask.shape());
}

// Out of place, x and mask broadcast together (the result may be larger than x), as in ATen.
void prepare_masked_fill(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  const Dims shape = check_mask(call, x, call.input(1));
  check_fill_value(call.op.name, call.attrs<MaskedFillAttrs>().value, x.dtype(), shape);
  checked_nbytes(shape, x.dtype(), call.op.name);  // the copy the composite makes
}

// In place, the mask must broadcast to x's own shape.
void prepare_masked_fill_(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  const Tensor& mask = call.input(1);
  TS_CHECK(check_mask(call, x, mask) == x.shape(),
           "{}: the mask of shape {} cannot be broadcast to the input's shape {}", call.op.name, mask.shape(),
           x.shape());
  check_fill_value(call.op.name, call.attrs<MaskedFillAttrs>().value, x.dtype(), x.shape());
  check_no_internal_overlap(call, x);
  call.out = x;
}

void prepare_where(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& cond = call.input(0);
  const Tensor& a = call.input(1);
  const Tensor& b = call.input(2);
  TS_CHECK(cond.dtype() == DType::b8, "where: expected a bool condition, got {} (shape {})",
           dtype_short_name(cond.dtype()), cond.shape());
  check_same_dtype(call, a, b);
  const Dims shape = broadcast_shapes(call, broadcast_shapes(call, cond.shape(), a.shape()), b.shape());
  call.out = make_contiguous_tensor(shape, {a.dtype(), call.device}, call.op.name);
}

void prepare_triangle(OpCall& call) {
  check_inputs_on_one_device(call);
  const Tensor& x = call.input(0);
  TS_CHECK(x.dim() >= 2, "{}: input tensor must have at least 2 dimensions, got shape {}", call.op.name,
           x.shape());
  call.out = make_contiguous_tensor(x.shape(), {x.dtype(), call.device}, call.op.name);
}

// Every input read once, the output written once.
Cost masking_cost(const OpCall& call) {
  double bytes = static_cast<double>(call.out.numel()) * static_cast<double>(call.out.element_size());
  for (const Tensor* x : call.tensor_args())
    if (x != nullptr) bytes += static_cast<double>(x->numel()) * static_cast<double>(x->element_size());
  return {0, bytes};
}

// masked_fill(self, mask, value) records its value after the tensors.
void fill_value(const OpCall& call, std::vector<double>& out) { out.push_back(call.attrs<MaskedFillAttrs>().value); }

using enum VariantDevice;

// clang-format off
const Variant masked_fill_rungs[] = {
  {"masked_fill/any/composite", &ops::masked_fill,  any,  0, no_gpu, "clone + masked_fill_: the copy is the price of out-of-place", nullptr, run_kernel<&masked_fill_composite>, "ops/masking/masking.cpp"},
};
const Variant masked_fill__rungs[] = {
  {"masked_fill_/cpu/ref",      &ops::masked_fill_, cpu,  0, no_gpu, "in place: x = mask ? value : x, mask broadcast",         nullptr, run_kernel<&masked_fill__cpu_ref>, "ops/masking/masking_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"masked_fill_/cuda/naive",   &ops::masked_fill_, cuda, 1, sm75,   "one thread per element, writes where the mask is true",  nullptr, run_kernel<&masked_fill__cuda_naive>, "ops/masking/masking_cuda_naive.cu"},
  {"masked_fill_/cuda/rows",    &ops::masked_fill_, cuda, 2, sm75,   "16-byte packs of x; the mask one block repeated (x [B,H,S,L], mask [S,L])", masked_fill__cuda_rows_supports, run_kernel<&masked_fill__cuda_rows>, "ops/masking/masking_cuda_rows.cu"},
#endif
};
const Variant where_rungs[] = {
  {"where/cpu/ref",             &ops::where,        cpu,  0, no_gpu, "cond ? a : b, all three broadcast",                      nullptr, run_kernel<&where_cpu_ref>, "ops/masking/masking_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"where/cuda/naive",          &ops::where,        cuda, 1, sm75,   "one thread per element, three broadcast reads",          nullptr, run_kernel<&where_cuda_naive>, "ops/masking/masking_cuda_naive.cu"},
#endif
};
const Variant triu_rungs[] = {
  {"triu/cpu/ref",              &ops::triu,         cpu,  0, no_gpu, "keep j - i >= diagonal in the last two dims",            nullptr, run_kernel<&triu_cpu_ref>, "ops/masking/masking_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"triu/cuda/naive",           &ops::triu,         cuda, 1, sm75,   "one thread per element; (row, col) from the output index", nullptr, run_kernel<&triu_cuda_naive>, "ops/masking/masking_cuda_naive.cu"},
#endif
};
const Variant tril_rungs[] = {
  {"tril/cpu/ref",              &ops::tril,         cpu,  0, no_gpu, "keep j - i <= diagonal in the last two dims",            nullptr, run_kernel<&tril_cpu_ref>, "ops/masking/masking_cpu_ref.cpp"},
#if TS_HAVE_CUDA
  {"tril/cuda/naive",           &ops::tril,         cuda, 1, sm75,   "one thread per element; (row, col) from the output index", nullptr, run_kernel<&tril_cuda_naive>, "ops/masking/masking_cuda_naive.cu"},
#endif
};
// clang-format on

}  // namespace

namespace ops {
const OpDef masked_fill{.name = "ts::masked_fill", .attrs = attrs_tag<MaskedFillAttrs>, .prepare = prepare_masked_fill,
                        .rungs = masked_fill_rungs, .scalar_args = fill_value};
const OpDef masked_fill_{.name = "ts::masked_fill_", .attrs = attrs_tag<MaskedFillAttrs>,
                         .prepare = prepare_masked_fill_, .rungs = masked_fill__rungs, .cost = masking_cost,
                         .scalar_args = fill_value};
const OpDef where{.name = "ts::where", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_where, .rungs = where_rungs,
                  .cost = masking_cost};
const OpDef triu{.name = "ts::triu", .attrs = attrs_tag<TriangleAttrs>, .prepare = prepare_triangle,
                 .rungs = triu_rungs, .cost = masking_cost};
const OpDef tril{.name = "ts::tril", .attrs = attrs_tag<TriangleAttrs>, .prepare = prepare_triangle,
                 .rungs = tril_rungs, .cost = masking_cost};
}  // namespace ops

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Where loc) {
  const MaskedFillAttrs attrs{value};
  OpCall call(ops::masked_fill, attrs, loc, {&x, &mask});
  return dispatch(call);
}

void masked_fill_composite(const Tensor& x, const Tensor& mask, const MaskedFillAttrs& attrs, Tensor& out) {
  const Dims shape = broadcast_shapes(ops::masked_fill.name, x.shape(), mask.shape());
  out = clone(shape == x.shape() ? x : expand(x, shape));
  masked_fill_(out, mask, attrs.value);
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, double value, Where loc) {
  const MaskedFillAttrs attrs{value};
  OpCall call(ops::masked_fill_, attrs, loc, {&x, &mask});
  dispatch(call);
  return x;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::where, attrs, loc, {&condition, &a, &b});
  return dispatch(call);
}

Tensor triu(const Tensor& x, int64_t diagonal, Where loc) {
  const TriangleAttrs attrs{diagonal};
  OpCall call(ops::triu, attrs, loc, {&x});
  return dispatch(call);
}

Tensor tril(const Tensor& x, int64_t diagonal, Where loc) {
  const TriangleAttrs attrs{diagonal};
  OpCall call(ops::tril, attrs, loc, {&x});
  return dispatch(call);
}

}  // namespace ts
