// ops/tensor_methods.cpp: Tensor's member ops, each forwarding to its free function in ops/ops.h.
#include "ops/ops.h"

namespace ts {

Tensor Tensor::t(Where loc) const { return ts::t(*this, loc); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, Where loc) const { return ts::transpose(*this, dim0, dim1, loc); }
Tensor Tensor::permute(const Dims& dims, Where loc) const { return ts::permute(*this, dims, loc); }
Tensor Tensor::view(const Dims& shape, Where loc) const { return ts::view(*this, shape, loc); }
Tensor Tensor::reshape(const Dims& shape, Where loc) const { return ts::reshape(*this, shape, loc); }
Tensor Tensor::unsqueeze(int64_t dim, Where loc) const { return ts::unsqueeze(*this, dim, loc); }
Tensor Tensor::squeeze(Where loc) const { return ts::squeeze(*this, loc); }
Tensor Tensor::squeeze(int64_t dim, Where loc) const { return ts::squeeze(*this, dim, loc); }
Tensor Tensor::expand(const Dims& shape, Where loc) const { return ts::expand(*this, shape, loc); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length, Where loc) const {
  return ts::narrow(*this, dim, start, length, loc);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step, Where loc) const {
  return ts::slice(*this, dim, start, end, step, loc);
}
Tensor Tensor::select(int64_t dim, int64_t index, Where loc) const { return ts::select(*this, dim, index, loc); }
Tensor Tensor::as_strided(const Dims& shape, const Dims& strides, int64_t offset, Where loc) const {
  return ts::as_strided(*this, shape, strides, offset, loc);
}
Tensor Tensor::contiguous(Where loc) const { return ts::contiguous(*this, loc); }
Tensor Tensor::clone(Where loc) const { return ts::clone(*this, loc); }
Tensor Tensor::to(DType dtype, Where loc) const { return ts::to(*this, dtype, loc); }
Tensor Tensor::to(Device device, Where loc) const { return ts::to(*this, device, loc); }

}  // namespace ts
