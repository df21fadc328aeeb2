// tensor/tensor.h: Tensor, a view (shape, strides, offset, dtype) of a shared Storage.
//
// A Tensor is cheap to copy: copies share the storage, like torch.Tensor.
// Views (t, transpose, permute, view, expand, narrow, select, ...) make a new
// Tensor over the same Storage with other shape/strides/offset; nothing is
// copied. Element (i0, i1, ...) lives at
//     storage.data() + (offset + sum_k i_k * strides[k]) * element_size(dtype)
//
// The methods below are the ops of ops/ops.h spelled as members; each goes
// through the dispatcher like its free-function twin.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace ts {

// The caller's source location, captured by default arguments at every
// public op (the profiler's with_stack shows it).
using Where = std::source_location;

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  // A view of `storage`. Throws ts::Error (naming the shape, strides, offset and
  // the storage's size) unless the view can exist: sizes >= 0, an element count
  // that fits in int64, and every element it addresses inside the storage.
  Tensor(std::shared_ptr<Storage> storage, const Dims& shape, const Dims& strides, int64_t offset, DType dtype);

  // ---- metadata ----
  bool defined() const { return storage_ != nullptr; }
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }
  int dim() const { return shape_.size(); }
  int64_t size(int64_t dim) const;    // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t numel() const { return numel_of(shape_); }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : kCPU; }
  size_t element_size() const { return ts::element_size(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Address of element (0, 0, ...): storage data plus offset.
  void* data_ptr() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(ts::element_size(dtype_));
  }
  // Typed pointer; throws ts::Error when T does not match dtype().
  template <typename T>
  T* data() const {
    TS_CHECK(dtype_of<T>() == dtype_, "data<{}>(): tensor has dtype {}", dtype_short_name(dtype_of<T>()),
             dtype_short_name(dtype_));
    return static_cast<T*>(data_ptr());
  }

  // ---- views (no copy) ----
  Tensor t(Where loc = Where::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, Where loc = Where::current()) const;
  Tensor permute(const Dims& dims, Where loc = Where::current()) const;
  Tensor view(const Dims& shape, Where loc = Where::current()) const;
  Tensor reshape(const Dims& shape, Where loc = Where::current()) const;
  Tensor unsqueeze(int64_t dim, Where loc = Where::current()) const;
  Tensor squeeze(Where loc = Where::current()) const;
  Tensor squeeze(int64_t dim, Where loc = Where::current()) const;
  Tensor expand(const Dims& shape, Where loc = Where::current()) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length, Where loc = Where::current()) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1, Where loc = Where::current()) const;
  Tensor select(int64_t dim, int64_t index, Where loc = Where::current()) const;
  Tensor as_strided(const Dims& shape, const Dims& strides, int64_t offset, Where loc = Where::current()) const;
  Tensor operator[](int64_t index) const { return select(0, index); }

  // ---- copies and conversions ----
  Tensor contiguous(Where loc = Where::current()) const;
  Tensor clone(Where loc = Where::current()) const;
  Tensor to(DType dtype, Where loc = Where::current()) const;
  Tensor to(Device device, Where loc = Where::current()) const;

  // The value of a one-element tensor, converted to T (copied to host when needed).
  template <typename T>
  T item() const;
  // All elements in row-major order, converted to T (copied to host when needed).
  template <typename T>
  std::vector<T> to_vector() const;

  // PyTorch-style text: tensor([[1., 2.], [3., 4.]], dtype=ts.bfloat16, device='cuda:0')
  std::string str() const;

 private:
  std::shared_ptr<Storage> storage_;
  Dims shape_;
  Dims strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

// Options for factories: ts::zeros({2, 3}, ts::DType::bf16), ts::empty({4}, {DType::f32, kCUDA}).
struct Options {
  DType dtype = DType::f32;
  Device device = kCPU;
  Options() = default;
  Options(DType d) : dtype(d) {}                 // NOLINT: implicit on purpose
  Options(Device d) : device(d) {}               // NOLINT
  Options(DType d, Device dev) : dtype(d), device(dev) {}
};

namespace detail {
// Where x's element (0, 0, ...) can be read on the host: data_ptr() for a cpu
// tensor; for a device tensor, the storage span the view covers is copied into
// `host` first (a view's extent is small even when its numel is not: an
// expanded view covers one row).
const char* host_data(const Tensor& x, std::vector<char>& host);
}  // namespace detail

// A fresh contiguous tensor with uninitialised values (no dispatch: ts::empty is the op).
// A negative size, or a byte count past int64 (checked_nbytes), throws ts::Error
// naming `what` (the op that asked) and the shape.
Tensor make_contiguous_tensor(const Dims& shape, Options options, std::string_view what = "empty");

}  // namespace ts

template <>
struct fmt::formatter<ts::Tensor> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const ts::Tensor& t, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "{}", t.str());
  }
};
