// ops/views/views.cpp: every view op. A view is a new (shape, strides, offset)
// over the same Storage: no kernel, no copy, zero device time. The variant's
// "kernel" is the metadata arithmetic, with its checks.
#include "ops/views/views.h"

#include <algorithm>
#include <optional>

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ts {

namespace {

void prepare_view(OpCall& call) { check_inputs_on_one_device(call); }

// The view (shape, strides, offset) of x's storage. The ops check their arguments
// first; the Tensor constructor checks the view again (sizes, extent, offset), and
// an error it finds is reported under the op's name.
Tensor make_view(const char* op, const Tensor& x, const Dims& shape, const Dims& strides, int64_t offset) {
  try {
    return Tensor(x.storage(), shape, strides, offset, x.dtype());
  } catch (const Error& e) {
    fail("{}: {}", op, e.what());
  }
}

// x's storage offset moved `index` steps along dim d. Checked: an empty tensor may
// carry strides whose multiples overflow int64 (as_strided({4, 0}, {1 << 62, 1})).
int64_t offset_along(const char* op, const Tensor& x, int d, int64_t index) {
  int64_t step = 0, offset = 0;
  if (__builtin_mul_overflow(index, x.strides()[d], &step) || __builtin_add_overflow(x.offset(), step, &offset))
    fail("{}: the storage offset {} + {} * {} (index times the stride of dim {}) overflows int64 (shape {}, "
         "strides {})",
         op, x.offset(), index, x.strides()[d], d, x.shape(), x.strides());
  return offset;
}

// Resolves one -1 in `shape` against numel (PyTorch's infer_size).
Dims infer_shape(const char* op, const Dims& shape, int64_t numel) {
  Dims out = shape;
  int infer = -1;
  int64_t known = 1;  // the product of the sizes other than -1, checked: [2^32, 2^32] overflows
  bool overflow = false, empty = false;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TS_CHECK(infer < 0, "{}: only one dimension can be inferred (shape {})", op, shape);
      infer = i;
    } else {
      TS_CHECK(shape[i] >= 0, "{}: invalid shape dimension {} in {}", op, shape[i], shape);
      empty = empty || shape[i] == 0;
      overflow = overflow || __builtin_mul_overflow(known, shape[i], &known);
    }
  }
  if (empty) known = 0;  // however large the other sizes
  TS_CHECK(!overflow || empty, "{}: shape {} has more elements than int64 can count (more than {})", op, shape,
           INT64_MAX);
  if (infer >= 0) {
    TS_CHECK(known != 0 && numel % known == 0, "{}: shape '{}' is invalid for input of size {}", op, shape, numel);
    out[infer] = numel / known;
  }
  TS_CHECK(infer >= 0 || known == numel, "{}: shape '{}' is invalid for input of size {}", op, shape, numel);
  return out;
}

// Strides that let `new_shape` view memory laid out as (old_shape, old_strides),
// or nothing when a new dim would span two non-contiguous chunks. This is
// PyTorch's computeStride: walk both shapes from the innermost dim, matching
// runs of old dims that are contiguous with each other ("chunks").
std::optional<Dims> view_strides(const char* op, const Dims& old_shape, const Dims& old_strides,
                                 const Dims& new_shape) {
  if (old_shape.empty() || numel_of(old_shape) == 0) return contiguous_strides(new_shape, op);
  Dims new_strides = Dims::filled(new_shape.size(), 0);
  int view_d = new_shape.size() - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = old_shape.size() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    const bool chunk_ends = tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                                              old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    // Lay the new dims over this chunk, innermost first.
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      new_strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

namespace {

using enum VariantDevice;

// clang-format off
const Variant t_rungs[] =          {{"t/any/view",          &ops::t,          any, 0, no_gpu, "swap the two dims' sizes and strides",                nullptr, run_kernel<&t_view>, "ops/views/views.cpp"}};
const Variant transpose_rungs[] =  {{"transpose/any/view",  &ops::transpose,  any, 0, no_gpu, "swap two dims' sizes and strides",                    nullptr, run_kernel<&transpose_view>, "ops/views/views.cpp"}};
const Variant permute_rungs[] =    {{"permute/any/view",    &ops::permute,    any, 0, no_gpu, "reorder sizes and strides",                           nullptr, run_kernel<&permute_view>, "ops/views/views.cpp"}};
const Variant view_rungs[] =       {{"view/any/view",       &ops::view,       any, 0, no_gpu, "new shape over the same strides, when they allow it", nullptr, run_kernel<&view_view>, "ops/views/views.cpp"}};
const Variant reshape_rungs[] =    {{"reshape/any/composite", &ops::reshape,  any, 0, no_gpu, "view when the strides allow, else contiguous copy + view", nullptr, run_kernel<&reshape_composite>, "ops/views/views.cpp"}};
const Variant unsqueeze_rungs[] =  {{"unsqueeze/any/view",  &ops::unsqueeze,  any, 0, no_gpu, "insert a size-1 dim",                                 nullptr, run_kernel<&unsqueeze_view>, "ops/views/views.cpp"}};
const Variant squeeze_rungs[] =    {{"squeeze/any/view",    &ops::squeeze,    any, 0, no_gpu, "drop size-1 dims",                                    nullptr, run_kernel<&squeeze_view>, "ops/views/views.cpp"}};
const Variant expand_rungs[] =     {{"expand/any/view",     &ops::expand,     any, 0, no_gpu, "size-1 dims grow with stride 0",                      nullptr, run_kernel<&expand_view>, "ops/views/views.cpp"}};
const Variant narrow_rungs[] =     {{"narrow/any/view",     &ops::narrow,     any, 0, no_gpu, "offset + shorter size",                               nullptr, run_kernel<&narrow_view>, "ops/views/views.cpp"}};
const Variant slice_rungs[] =      {{"slice/any/view",      &ops::slice,      any, 0, no_gpu, "offset, shorter size, stride times step",             nullptr, run_kernel<&slice_view>, "ops/views/views.cpp"}};
const Variant select_rungs[] =     {{"select/any/view",     &ops::select,     any, 0, no_gpu, "offset by index*stride, drop the dim",                nullptr, run_kernel<&select_view>, "ops/views/views.cpp"}};
const Variant as_strided_rungs[] = {{"as_strided/any/view", &ops::as_strided, any, 0, no_gpu, "any sizes/strides/offset inside the storage",         nullptr, run_kernel<&as_strided_view>, "ops/views/views.cpp"}};
// clang-format on

}  // namespace

namespace ops {
// Every view's, and reshape's (a view whenever the strides allow one, else contiguous's copy).
constexpr const char* kNoLadderProblem =
    "a view: new sizes, strides and offset over the same storage, no kernel (ts_bench times its CPU cost)";
const OpDef t{.name = "ts::t", .attrs = attrs_tag<NoAttrs>, .prepare = prepare_view, .rungs = t_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef transpose{.name = "ts::transpose", .attrs = attrs_tag<TransposeAttrs>, .prepare = prepare_view, .rungs = transpose_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef permute{.name = "ts::permute", .attrs = attrs_tag<PermuteAttrs>, .prepare = prepare_view, .rungs = permute_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef view{.name = "ts::view", .attrs = attrs_tag<ViewAttrs>, .prepare = prepare_view, .rungs = view_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef reshape{.name = "ts::reshape", .attrs = attrs_tag<ReshapeAttrs>, .prepare = prepare_view, .rungs = reshape_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef unsqueeze{.name = "ts::unsqueeze", .attrs = attrs_tag<UnsqueezeAttrs>, .prepare = prepare_view, .rungs = unsqueeze_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef squeeze{.name = "ts::squeeze", .attrs = attrs_tag<SqueezeAttrs>, .prepare = prepare_view, .rungs = squeeze_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef expand{.name = "ts::expand", .attrs = attrs_tag<ExpandAttrs>, .prepare = prepare_view, .rungs = expand_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef narrow{.name = "ts::narrow", .attrs = attrs_tag<NarrowAttrs>, .prepare = prepare_view, .rungs = narrow_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef slice{.name = "ts::slice", .attrs = attrs_tag<SliceAttrs>, .prepare = prepare_view, .rungs = slice_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef select{.name = "ts::select", .attrs = attrs_tag<SelectAttrs>, .prepare = prepare_view, .rungs = select_rungs,
                  .no_ladder_problem = kNoLadderProblem};
const OpDef as_strided{.name = "ts::as_strided", .attrs = attrs_tag<AsStridedAttrs>, .prepare = prepare_view, .rungs = as_strided_rungs,
                  .no_ladder_problem = kNoLadderProblem};
}  // namespace ops

// ---- t / transpose / permute ------------------------------------------------------

Tensor t(const Tensor& x, Where loc) {
  const NoAttrs attrs;
  OpCall call(ops::t, attrs, loc, {&x});
  return dispatch(call);
}

void t_view(const Tensor& x, Tensor& out) {
  TS_CHECK(x.dim() <= 2, "t: t() expects a tensor with <= 2 dimensions, but self is {}D (shape {})", x.dim(),
           x.shape());
  Dims shape = x.shape(), strides = x.strides();
  if (x.dim() == 2) {
    std::swap(shape[0], shape[1]);
    std::swap(strides[0], strides[1]);
  }
  out = make_view("t", x, shape, strides, x.offset());
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Where loc) {
  const TransposeAttrs attrs{dim0, dim1};
  OpCall call(ops::transpose, attrs, loc, {&x});
  return dispatch(call);
}

void transpose_view(const Tensor& x, const TransposeAttrs& attrs, Tensor& out) {
  const int d0 = wrap_dim(attrs.dim0, x.dim(), "transpose"), d1 = wrap_dim(attrs.dim1, x.dim(), "transpose");
  Dims shape = x.shape(), strides = x.strides();
  if (x.dim() > 0) {
    std::swap(shape[d0], shape[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  out = make_view("transpose", x, shape, strides, x.offset());
}

Tensor permute(const Tensor& x, const Dims& dims, Where loc) {
  const PermuteAttrs attrs{dims};
  OpCall call(ops::permute, attrs, loc, {&x});
  return dispatch(call);
}

void permute_view(const Tensor& x, const PermuteAttrs& attrs, Tensor& out) {
  const Dims& order = attrs.order;
  TS_CHECK(order.size() == x.dim(),
           "permute: number of dims don't match in permute (input has {} dims {}, order {} has {})", x.dim(),
           x.shape(), order, order.size());
  Dims shape = x.shape(), strides = x.strides();
  bool seen[kMaxDims] = {};
  for (int i = 0; i < order.size(); ++i) {
    const int d = wrap_dim(order[i], x.dim(), "permute");
    TS_CHECK(!seen[d], "permute: repeated dim {} in order {}", d, order);
    seen[d] = true;
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  out = make_view("permute", x, shape, strides, x.offset());
}

// ---- view / reshape ------------------------------------------------------------------

Tensor view(const Tensor& x, const Dims& shape, Where loc) {
  const ViewAttrs attrs{shape};
  OpCall call(ops::view, attrs, loc, {&x});
  return dispatch(call);
}

void view_view(const Tensor& x, const ViewAttrs& attrs, Tensor& out) {
  const Dims shape = infer_shape("view", attrs.shape, x.numel());
  const std::optional<Dims> strides = view_strides("view", x.shape(), x.strides(), shape);
  TS_CHECK(strides.has_value(),
           "view: view size is not compatible with input tensor's size and stride (at least one dimension spans "
           "across two contiguous subspaces). Input shape {} strides {}, requested shape {}. Use .reshape(...) "
           "instead.",
           x.shape(), x.strides(), attrs.shape);
  out = make_view("view", x, shape, *strides, x.offset());
}

Tensor reshape(const Tensor& x, const Dims& shape, Where loc) {
  const ReshapeAttrs attrs{shape};
  OpCall call(ops::reshape, attrs, loc, {&x});
  return dispatch(call);
}

void reshape_composite(const Tensor& x, const ReshapeAttrs& attrs, Tensor& out) {
  const Dims shape = infer_shape("reshape", attrs.shape, x.numel());
  if (view_strides("reshape", x.shape(), x.strides(), shape)) {
    out = view(x, shape);
  } else {
    out = view(clone(x), shape);  // the strides forbid a view: copy first
  }
}

// ---- unsqueeze / squeeze / expand ------------------------------------------------------

Tensor unsqueeze(const Tensor& x, int64_t dim, Where loc) {
  const UnsqueezeAttrs attrs{dim};
  OpCall call(ops::unsqueeze, attrs, loc, {&x});
  return dispatch(call);
}

void unsqueeze_view(const Tensor& x, const UnsqueezeAttrs& attrs, Tensor& out) {
  const int d = wrap_dim(attrs.dim, x.dim() + 1, "unsqueeze");
  TS_CHECK(x.dim() < kMaxDims, "unsqueeze: tensors have at most {} dims, and the input (shape {}) has {} already",
           kMaxDims, x.shape(), x.dim());
  Dims shape = x.shape(), strides = x.strides();
  // Any stride works for a size-1 dim; PyTorch's choice keeps contiguous tensors contiguous.
  // (An empty tensor's strides may be so large that the product overflows: then 1.)
  int64_t stride = 1;
  if (d < x.dim() && __builtin_mul_overflow(x.shape()[d], x.strides()[d], &stride)) stride = 1;
  shape.insert(d, 1);
  strides.insert(d, stride);
  out = make_view("unsqueeze", x, shape, strides, x.offset());
}

Tensor squeeze(const Tensor& x, Where loc) {
  const SqueezeAttrs attrs;  // every size-1 dim
  OpCall call(ops::squeeze, attrs, loc, {&x});
  return dispatch(call);
}

Tensor squeeze(const Tensor& x, int64_t dim, Where loc) {
  const SqueezeAttrs attrs{dim};
  OpCall call(ops::squeeze, attrs, loc, {&x});
  return dispatch(call);
}

void squeeze_view(const Tensor& x, const SqueezeAttrs& attrs, Tensor& out) {
  const int only = attrs.dim ? wrap_dim(*attrs.dim, x.dim(), "squeeze") : -1;  // -1: every size-1 dim
  Dims shape, strides;
  for (int i = 0; i < x.dim(); ++i) {
    const bool drop = x.shape()[i] == 1 && (only < 0 || only == i);
    if (drop) continue;
    shape.push_back(x.shape()[i]);
    strides.push_back(x.strides()[i]);
  }
  out = make_view("squeeze", x, shape, strides, x.offset());
}

Tensor expand(const Tensor& x, const Dims& shape, Where loc) {
  const ExpandAttrs attrs{shape};
  OpCall call(ops::expand, attrs, loc, {&x});
  return dispatch(call);
}

void expand_view(const Tensor& x, const ExpandAttrs& attrs, Tensor& out) {
  const Dims& target = attrs.shape;
  TS_CHECK(target.size() >= x.dim(),
           "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the "
           "tensor ({}); tensor shape {}",
           target.size(), x.dim(), x.shape());
  Dims shape = target, strides = Dims::filled(target.size(), 0);
  const int lead = target.size() - x.dim();
  for (int i = 0; i < target.size(); ++i) {
    if (i < lead) {  // a new leading dim: every index reads the same memory
      TS_CHECK(target[i] >= 0, "expand: the expanded size {} is not allowed in a leading, non-existing dimension {}",
               target[i], i);
      continue;
    }
    const int64_t have = x.shape()[i - lead];
    if (target[i] == -1 || target[i] == have) {
      shape[i] = have;
      strides[i] = x.strides()[i - lead];
    } else {
      TS_CHECK(target[i] >= 0, "expand: the expanded size {} at dimension {} is negative (only -1 keeps a size). "
               "Target sizes: {}. Tensor sizes: {}", target[i], i, target, x.shape());
      TS_CHECK(have == 1,
               "expand: the expanded size of the tensor ({}) must match the existing size ({}) at non-singleton "
               "dimension {}. Target sizes: {}. Tensor sizes: {}",
               target[i], have, i, target, x.shape());
      strides[i] = 0;
    }
  }
  checked_numel(shape, "expand");  // [2^32, 2^32] over one element: more elements than int64 counts
  out = make_view("expand", x, shape, strides, x.offset());
}

// ---- narrow / slice / select / as_strided -------------------------------------------------

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Where loc) {
  const NarrowAttrs attrs{dim, start, length};
  OpCall call(ops::narrow, attrs, loc, {&x});
  return dispatch(call);
}

void narrow_view(const Tensor& x, const NarrowAttrs& attrs, Tensor& out) {
  TS_CHECK(x.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  const int d = wrap_dim(attrs.dim, x.dim(), "narrow");
  const int64_t size = x.shape()[d];
  int64_t start = attrs.start;
  const int64_t length = attrs.length;
  TS_CHECK(start >= -size && start <= size, "narrow: start ({}) out of range for dimension {} of size {} (shape {})",
           start, d, size, x.shape());
  if (start < 0) start += size;
  TS_CHECK(length >= 0 && length <= size - start,  // start + length could overflow
           "narrow: start ({}) + length ({}) exceeds dimension size ({}) of dim {} (shape {})", start, length, size, d,
           x.shape());
  Dims shape = x.shape();
  shape[d] = length;
  out = make_view("narrow", x, shape, x.strides(), offset_along("narrow", x, d, start));
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step, Where loc) {
  const SliceAttrs attrs{dim, start, end, step};
  OpCall call(ops::slice, attrs, loc, {&x});
  return dispatch(call);
}

void slice_view(const Tensor& x, const SliceAttrs& attrs, Tensor& out) {
  TS_CHECK(x.dim() > 0, "slice: cannot be applied to a 0-dim tensor");
  TS_CHECK(attrs.step > 0, "slice: step must be positive, got {}", attrs.step);
  const int d = wrap_dim(attrs.dim, x.dim(), "slice");
  const int64_t size = x.shape()[d];
  // Python's slice rules: negative bounds count from the end, then clamp to [0, size].
  auto clamp_bound = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  const int64_t start = clamp_bound(attrs.start), end = std::max(start, clamp_bound(attrs.end));
  Dims shape = x.shape(), strides = x.strides();
  // ceil((end - start) / step) without forming end - start + step - 1, which overflows for a huge step.
  const int64_t span = end - start;
  shape[d] = span / attrs.step + (span % attrs.step != 0 ? 1 : 0);
  // The new stride is step times the old one. A dim of size 0 or 1 never uses its
  // stride: it keeps the old one, and a huge step (INT64_MAX) that keeps one element
  // is valid. With two elements or more, step < size and the product lies inside the
  // extent of x: it cannot overflow unless x is empty with huge strides.
  if (shape[d] > 1)
    TS_CHECK(!__builtin_mul_overflow(x.strides()[d], attrs.step, &strides[d]),
             "slice: step {} times the stride {} of dimension {} overflows int64 (shape {}, strides {})", attrs.step,
             x.strides()[d], d, x.shape(), x.strides());
  out = make_view("slice", x, shape, strides, offset_along("slice", x, d, start));
}

Tensor select(const Tensor& x, int64_t dim, int64_t index, Where loc) {
  const SelectAttrs attrs{dim, index};
  OpCall call(ops::select, attrs, loc, {&x});
  return dispatch(call);
}

void select_view(const Tensor& x, const SelectAttrs& attrs, Tensor& out) {
  TS_CHECK(x.dim() > 0, "select: select() cannot be applied to a 0-dim tensor");
  const int d = wrap_dim(attrs.dim, x.dim(), "select");
  const int64_t size = x.shape()[d];
  const int64_t index = attrs.index;
  TS_CHECK(index >= -size && index < size, "select: index {} out of range for tensor of size {} at dimension {}",
           index, x.shape(), d);
  const int64_t i = index < 0 ? index + size : index;
  Dims shape = x.shape(), strides = x.strides();
  shape.erase(d);
  strides.erase(d);
  out = make_view("select", x, shape, strides, offset_along("select", x, d, i));
}

Tensor as_strided(const Tensor& x, const Dims& shape, const Dims& strides, int64_t offset, Where loc) {
  const AsStridedAttrs attrs{shape, strides, offset};
  OpCall call(ops::as_strided, attrs, loc, {&x});
  return dispatch(call);
}

void as_strided_view(const Tensor& x, const AsStridedAttrs& attrs, Tensor& out) {
  const Dims &shape = attrs.shape, &strides = attrs.strides;
  TS_CHECK(shape.size() == strides.size(), "as_strided: mismatch in length of strides ({}) and shape ({})", strides,
           shape);
  TS_CHECK(attrs.offset >= 0, "as_strided: negative storage offset {}", attrs.offset);
  for (int i = 0; i < shape.size(); ++i)
    TS_CHECK(shape[i] >= 0 && strides[i] >= 0, "as_strided: negative size or stride (shape {}, strides {})", shape,
             strides);
  checked_numel(shape, "as_strided");
  // One past the last element reached (0 when a size is 0: nothing is reached, whatever
  // the strides), every step checked for overflow; it must lie inside the storage.
  const int64_t extent = storage_extent(shape, strides, attrs.offset, "as_strided");
  const int64_t itemsize = static_cast<int64_t>(x.element_size());
  const int64_t storage_elems = static_cast<int64_t>(x.storage()->nbytes()) / itemsize;
  if (extent > storage_elems) {
    int64_t bytes = 0;
    const bool fits = !__builtin_mul_overflow(extent, itemsize, &bytes);
    fail("as_strided: sizes {}, strides {}, storage offset {} and itemsize {} require a storage of {} bytes, but the "
         "storage holds {} bytes",
         shape, strides, attrs.offset, itemsize, fits ? fmt::to_string(bytes) : fmt::format("more than {}", INT64_MAX),
         x.storage()->nbytes());
  }
  int64_t offset_bytes = 0;  // data_ptr() of the view, even an empty one, must be addressable
  TS_CHECK(!__builtin_mul_overflow(attrs.offset, itemsize, &offset_bytes),
           "as_strided: storage offset {} times the itemsize {} overflows int64 (shape {}, strides {})", attrs.offset,
           itemsize, shape, strides);
  out = make_view("as_strided", x, shape, strides, attrs.offset);
}

}  // namespace ts
