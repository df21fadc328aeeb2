// ops/views/views.cpp: every view op. A view is a new (shape, strides, offset)
// over the same Storage: no kernel, no copy, zero device time. The variant's
// "kernel" is the metadata arithmetic, with its checks.
//
// Attributes used: dim/dim1 (transpose, unsqueeze, squeeze, narrow, slice,
// select), shape (view, reshape, expand, permute's order, as_strided),
// strides + start as offset (as_strided), start/end/step (narrow, slice,
// select's index in start).
#include <algorithm>
#include <optional>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/ops.h"
#include "ops/variants.h"

namespace ts {

namespace {

void prepare_view(OpCall& call) { check_inputs_on_one_device(call); }

Tensor make_view(const Tensor& x, const Dims& shape, const Dims& strides, int64_t offset) {
  return Tensor(x.storage(), shape, strides, offset, x.dtype());
}

// Resolves one -1 in `shape` against numel (PyTorch's infer_size).
Dims infer_shape(const char* op, const Dims& shape, int64_t numel) {
  Dims out = shape;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TS_CHECK(infer < 0, "{}: only one dimension can be inferred (shape {})", op, shape);
      infer = i;
    } else {
      TS_CHECK(shape[i] >= 0, "{}: invalid shape dimension {} in {}", op, shape[i], shape);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    TS_CHECK(known != 0 && numel % known == 0, "{}: shape '{}' is invalid for input of size {}", op, shape, numel);
    out[infer] = numel / known;
  }
  TS_CHECK(numel_of(out) == numel, "{}: shape '{}' is invalid for input of size {}", op, shape, numel);
  return out;
}

// Strides that let `new_shape` view memory laid out as (old_shape, old_strides),
// or nothing when a new dim would span two non-contiguous chunks. This is
// PyTorch's computeStride: walk both shapes from the innermost dim, matching
// runs of old dims that are contiguous with each other ("chunks").
std::optional<Dims> view_strides(const Dims& old_shape, const Dims& old_strides, const Dims& new_shape) {
  if (old_shape.empty() || numel_of(old_shape) == 0) return contiguous_strides(new_shape);
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

// ---- t / transpose / permute ------------------------------------------------------

Tensor t(const Tensor& x, Where loc) {
  OpCall call(OpId::t, loc, {&x});
  return dispatch(call, prepare_view);
}

void t_view(OpCall& call) {
  const Tensor& x = call.input(0);
  TS_CHECK(x.dim() <= 2, "t: t() expects a tensor with <= 2 dimensions, but self is {}D (shape {})", x.dim(),
           x.shape());
  Dims shape = x.shape(), strides = x.strides();
  if (x.dim() == 2) {
    std::swap(shape[0], shape[1]);
    std::swap(strides[0], strides[1]);
  }
  call.out = make_view(x, shape, strides, x.offset());
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, Where loc) {
  OpCall call(OpId::transpose, loc, {&x});
  call.dim = dim0;
  call.dim1 = dim1;
  return dispatch(call, prepare_view);
}

void transpose_view(OpCall& call) {
  const Tensor& x = call.input(0);
  const int d0 = wrap_dim(call.dim, x.dim(), "transpose"), d1 = wrap_dim(call.dim1, x.dim(), "transpose");
  Dims shape = x.shape(), strides = x.strides();
  if (x.dim() > 0) {
    std::swap(shape[d0], shape[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  call.out = make_view(x, shape, strides, x.offset());
}

Tensor permute(const Tensor& x, const Dims& dims, Where loc) {
  OpCall call(OpId::permute, loc, {&x});
  call.shape = dims;
  return dispatch(call, prepare_view);
}

void permute_view(OpCall& call) {
  const Tensor& x = call.input(0);
  const Dims& order = call.shape;
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
  call.out = make_view(x, shape, strides, x.offset());
}

// ---- view / reshape ------------------------------------------------------------------

Tensor view(const Tensor& x, const Dims& shape, Where loc) {
  OpCall call(OpId::view, loc, {&x});
  call.shape = shape;
  return dispatch(call, prepare_view);
}

void view_view(OpCall& call) {
  const Tensor& x = call.input(0);
  const Dims shape = infer_shape("view", call.shape, x.numel());
  const std::optional<Dims> strides = view_strides(x.shape(), x.strides(), shape);
  TS_CHECK(strides.has_value(),
           "view: view size is not compatible with input tensor's size and stride (at least one dimension spans "
           "across two contiguous subspaces). Input shape {} strides {}, requested shape {}. Use .reshape(...) "
           "instead.",
           x.shape(), x.strides(), call.shape);
  call.out = make_view(x, shape, *strides, x.offset());
}

Tensor reshape(const Tensor& x, const Dims& shape, Where loc) {
  OpCall call(OpId::reshape, loc, {&x});
  call.shape = shape;
  return dispatch(call, prepare_view);
}

void reshape_composite(OpCall& call) {
  const Tensor& x = call.input(0);
  const Dims shape = infer_shape("reshape", call.shape, x.numel());
  if (view_strides(x.shape(), x.strides(), shape)) {
    call.out = view(x, shape, call.loc);
  } else {
    call.out = view(clone(x, call.loc), shape, call.loc);  // the strides forbid a view: copy first
  }
}

// ---- unsqueeze / squeeze / expand ------------------------------------------------------

Tensor unsqueeze(const Tensor& x, int64_t dim, Where loc) {
  OpCall call(OpId::unsqueeze, loc, {&x});
  call.dim = dim;
  return dispatch(call, prepare_view);
}

void unsqueeze_view(OpCall& call) {
  const Tensor& x = call.input(0);
  const int d = wrap_dim(call.dim, x.dim() + 1, "unsqueeze");
  Dims shape = x.shape(), strides = x.strides();
  // Any stride works for a size-1 dim; PyTorch's choice keeps contiguous tensors contiguous.
  const int64_t stride = d < x.dim() ? x.shape()[d] * x.strides()[d] : 1;
  shape.insert(d, 1);
  strides.insert(d, stride);
  call.out = make_view(x, shape, strides, x.offset());
}

Tensor squeeze(const Tensor& x, Where loc) {
  OpCall call(OpId::squeeze, loc, {&x});
  call.dim = kMaxDims;  // sentinel: every size-1 dim
  return dispatch(call, prepare_view);
}

Tensor squeeze(const Tensor& x, int64_t dim, Where loc) {
  OpCall call(OpId::squeeze, loc, {&x});
  call.dim = wrap_dim(dim, x.dim(), "squeeze");
  return dispatch(call, prepare_view);
}

void squeeze_view(OpCall& call) {
  const Tensor& x = call.input(0);
  Dims shape, strides;
  for (int i = 0; i < x.dim(); ++i) {
    const bool drop = x.shape()[i] == 1 && (call.dim == kMaxDims || call.dim == i);
    if (drop) continue;
    shape.push_back(x.shape()[i]);
    strides.push_back(x.strides()[i]);
  }
  call.out = make_view(x, shape, strides, x.offset());
}

Tensor expand(const Tensor& x, const Dims& shape, Where loc) {
  OpCall call(OpId::expand, loc, {&x});
  call.shape = shape;
  return dispatch(call, prepare_view);
}

void expand_view(OpCall& call) {
  const Tensor& x = call.input(0);
  const Dims& target = call.shape;
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
      TS_CHECK(have == 1,
               "expand: the expanded size of the tensor ({}) must match the existing size ({}) at non-singleton "
               "dimension {}. Target sizes: {}. Tensor sizes: {}",
               target[i], have, i, target, x.shape());
      strides[i] = 0;
    }
  }
  call.out = make_view(x, shape, strides, x.offset());
}

// ---- narrow / slice / select / as_strided -------------------------------------------------

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, Where loc) {
  OpCall call(OpId::narrow, loc, {&x});
  call.dim = dim;
  call.start = start;
  call.end = length;
  return dispatch(call, prepare_view);
}

void narrow_view(OpCall& call) {
  const Tensor& x = call.input(0);
  TS_CHECK(x.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  const int d = wrap_dim(call.dim, x.dim(), "narrow");
  const int64_t size = x.shape()[d];
  int64_t start = call.start;
  const int64_t length = call.end;
  TS_CHECK(start >= -size && start <= size, "narrow: start ({}) out of range for dimension {} of size {} (shape {})",
           start, d, size, x.shape());
  if (start < 0) start += size;
  TS_CHECK(length >= 0 && start + length <= size,
           "narrow: start ({}) + length ({}) exceeds dimension size ({}) of dim {} (shape {})", start, length, size, d,
           x.shape());
  Dims shape = x.shape();
  shape[d] = length;
  call.out = make_view(x, shape, x.strides(), x.offset() + start * x.strides()[d]);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step, Where loc) {
  OpCall call(OpId::slice, loc, {&x});
  call.dim = dim;
  call.start = start;
  call.end = end;
  call.step = step;
  return dispatch(call, prepare_view);
}

void slice_view(OpCall& call) {
  const Tensor& x = call.input(0);
  TS_CHECK(x.dim() > 0, "slice: cannot be applied to a 0-dim tensor");
  TS_CHECK(call.step > 0, "slice: step must be positive, got {}", call.step);
  const int d = wrap_dim(call.dim, x.dim(), "slice");
  const int64_t size = x.shape()[d];
  // Python's slice rules: negative bounds count from the end, then clamp to [0, size].
  auto clamp_bound = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  const int64_t start = clamp_bound(call.start), end = std::max(start, clamp_bound(call.end));
  Dims shape = x.shape(), strides = x.strides();
  shape[d] = (end - start + call.step - 1) / call.step;
  strides[d] *= call.step;
  call.out = make_view(x, shape, strides, x.offset() + start * x.strides()[d]);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index, Where loc) {
  OpCall call(OpId::select, loc, {&x});
  call.dim = dim;
  call.start = index;
  return dispatch(call, prepare_view);
}

void select_view(OpCall& call) {
  const Tensor& x = call.input(0);
  TS_CHECK(x.dim() > 0, "select: select() cannot be applied to a 0-dim tensor");
  const int d = wrap_dim(call.dim, x.dim(), "select");
  const int64_t size = x.shape()[d];
  const int64_t index = call.start;
  TS_CHECK(index >= -size && index < size, "select: index {} out of range for tensor of size {} at dimension {}",
           index, x.shape(), d);
  const int64_t i = index < 0 ? index + size : index;
  Dims shape = x.shape(), strides = x.strides();
  shape.erase(d);
  strides.erase(d);
  call.out = make_view(x, shape, strides, x.offset() + i * x.strides()[d]);
}

Tensor as_strided(const Tensor& x, const Dims& shape, const Dims& strides, int64_t offset, Where loc) {
  OpCall call(OpId::as_strided, loc, {&x});
  call.shape = shape;
  call.strides = strides;
  call.start = offset;
  return dispatch(call, prepare_view);
}

void as_strided_view(OpCall& call) {
  const Tensor& x = call.input(0);
  TS_CHECK(call.shape.size() == call.strides.size(), "as_strided: mismatch in length of strides ({}) and shape ({})",
           call.strides, call.shape);
  TS_CHECK(call.start >= 0, "as_strided: negative storage offset {}", call.start);
  // The last element reached must lie inside the storage.
  int64_t last = call.start;
  for (int i = 0; i < call.shape.size(); ++i) {
    TS_CHECK(call.shape[i] >= 0 && call.strides[i] >= 0, "as_strided: negative size or stride (shape {}, strides {})",
             call.shape, call.strides);
    if (call.shape[i] == 0) last = -1;
    if (last >= 0) last += (call.shape[i] - 1) * call.strides[i];
  }
  const int64_t itemsize = static_cast<int64_t>(x.element_size());
  const int64_t storage_elems = static_cast<int64_t>(x.storage()->nbytes()) / itemsize;
  TS_CHECK(last < storage_elems,
           "as_strided: sizes {}, strides {}, storage offset {} and itemsize {} require a storage of {} bytes, but "
           "the storage holds {} bytes",
           call.shape, call.strides, call.start, itemsize, (last + 1) * itemsize, x.storage()->nbytes());
  call.out = make_view(x, call.shape, call.strides, call.start);
}

}  // namespace ts
