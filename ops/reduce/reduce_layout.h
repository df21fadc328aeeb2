// ops/reduce/reduce_layout.h: the iteration space of a reduction over one dim,
// shared by the CPU and CUDA rungs of sum and max.
#pragma once

#include "ops/reduce/reduce.h"

namespace ts {

// rows: x's shape with attrs.dim set to 1 (one entry per output element);
// x_strides: x's strides, or all 0 when x has no element (a sum over a size-0
// dim: each row reads nothing, and the strides of an empty view may be so
// large that walking them would overflow int64);
// out_strides: out's strides laid over x's dims (0 at attrs.dim), so that one
// walk over `rows` with x_strides and these gives both offsets.
struct ReduceLayout {
  Dims rows;
  Dims x_strides;
  Dims out_strides;
};

inline ReduceLayout reduce_layout(const Tensor& x, const ReduceAttrs& attrs, const Tensor& out) {
  const int d = static_cast<int>(attrs.dim);
  ReduceLayout layout{x.shape(), x.numel() == 0 ? Dims::filled(x.dim(), 0) : x.strides(), Dims::filled(x.dim(), 0)};
  for (int i = 0, j = 0; i < x.dim(); ++i) {
    if (i == d) {
      layout.rows[i] = 1;
      if (attrs.keepdim) ++j;  // out keeps a size-1 dim here: skip its stride
      continue;
    }
    layout.out_strides[i] = out.strides()[j++];
  }
  return layout;
}

}  // namespace ts
