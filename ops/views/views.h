// ops/views/views.h: every view op: its attributes, its OpDef and its "kernel",
// the metadata arithmetic (views.cpp). A view is a new (shape, strides,
// offset) over the same Storage: no kernel launch, no copy, zero device time.
#pragma once

#include <optional>

#include "ops/op.h"
#include "ops/ops.h"

namespace ts {

struct TransposeAttrs { int64_t dim0 = 0, dim1 = 0; };
struct PermuteAttrs { Dims order; };                      // out dim i is input dim order[i]
struct ViewAttrs { Dims shape; };                         // one -1 is inferred
struct ReshapeAttrs { Dims shape; };                      // one -1 is inferred
struct UnsqueezeAttrs { int64_t dim = 0; };
struct SqueezeAttrs { std::optional<int64_t> dim; };      // nullopt: every size-1 dim
struct ExpandAttrs { Dims shape; };                       // -1 keeps a size
struct NarrowAttrs { int64_t dim = 0, start = 0, length = 0; };
struct SliceAttrs { int64_t dim = 0, start = 0, end = 0, step = 1; };
struct SelectAttrs { int64_t dim = 0, index = 0; };
struct AsStridedAttrs { Dims shape, strides; int64_t offset = 0; };

namespace ops {
extern const OpDef t, transpose, permute, view, reshape, unsqueeze, squeeze, expand, narrow, slice, select,
    as_strided;
}  // namespace ops

// x: any tensor; out: a view of x's storage (reshape: a view, or a view of a contiguous copy).
void t_view(const Tensor& x, Tensor& out);
void transpose_view(const Tensor& x, const TransposeAttrs& attrs, Tensor& out);
void permute_view(const Tensor& x, const PermuteAttrs& attrs, Tensor& out);
void view_view(const Tensor& x, const ViewAttrs& attrs, Tensor& out);
void reshape_composite(const Tensor& x, const ReshapeAttrs& attrs, Tensor& out);
void unsqueeze_view(const Tensor& x, const UnsqueezeAttrs& attrs, Tensor& out);
void squeeze_view(const Tensor& x, const SqueezeAttrs& attrs, Tensor& out);
void expand_view(const Tensor& x, const ExpandAttrs& attrs, Tensor& out);
void narrow_view(const Tensor& x, const NarrowAttrs& attrs, Tensor& out);
void slice_view(const Tensor& x, const SliceAttrs& attrs, Tensor& out);
void select_view(const Tensor& x, const SelectAttrs& attrs, Tensor& out);
void as_strided_view(const Tensor& x, const AsStridedAttrs& attrs, Tensor& out);

}  // namespace ts
