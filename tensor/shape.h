// tensor/shape.h: Dims, the fixed-capacity list used for shapes and strides,
// and the overflow-checked arithmetic every size in the library goes through.
//
// Up to kMaxDims entries stored inline: making a view never touches the heap,
// which keeps `t()` and friends at a few nanoseconds. PyTorch order:
// outermost dimension first, strides counted in elements (not bytes).
//
// Sizes are int64 and a product of sizes can overflow: a shape such as
// [2^32, 2^32] has 2^64 elements, which wraps to 0 in int64 arithmetic, and a
// buffer sized from the wrapped count is then written past its end. So every
// element count, byte count and storage extent is computed by the checked
// helpers at the end of this file; they throw ts::Error, naming the caller and
// the shape, when the exact result does not fit.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "tensor/dtype.h"
#include "tensor/error.h"

namespace ts {

constexpr int kMaxDims = 8;

class Dims {
 public:
  constexpr Dims() = default;
  Dims(std::initializer_list<int64_t> values) {
    TS_CHECK(values.size() <= kMaxDims, "tensors have at most {} dims, got {}", kMaxDims, values.size());
    for (int64_t v : values) values_[size_++] = v;
  }
  template <typename It>
  Dims(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }
  // n copies of value.
  static Dims filled(int n, int64_t value) {
    Dims d;
    for (int i = 0; i < n; ++i) d.push_back(value);
    return d;
  }

  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t& operator[](int i) { return values_[i]; }
  int64_t operator[](int i) const { return values_[i]; }
  int64_t back() const { return values_[size_ - 1]; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + size_; }
  int64_t* begin() { return values_.data(); }
  int64_t* end() { return values_.data() + size_; }

  void push_back(int64_t v) {
    TS_CHECK(size_ < kMaxDims, "tensors have at most {} dims: cannot add a dim of size {} to {} dims", kMaxDims, v,
             size_);
    values_[size_++] = v;
  }
  void insert(int at, int64_t v) {
    TS_CHECK(size_ < kMaxDims, "tensors have at most {} dims: cannot insert a dim of size {} into {} dims", kMaxDims,
             v, size_);
    for (int i = size_; i > at; --i) values_[i] = values_[i - 1];
    values_[at] = v;
    ++size_;
  }
  void erase(int at) {
    for (int i = at; i + 1 < size_; ++i) values_[i] = values_[i + 1];
    --size_;
  }

  friend bool operator==(const Dims& a, const Dims& b) {
    if (a.size_ != b.size_) return false;
    for (int i = 0; i < a.size_; ++i)
      if (a.values_[i] != b.values_[i]) return false;
    return true;
  }

 private:
  std::array<int64_t, kMaxDims> values_{};
  int8_t size_ = 0;
};

}  // namespace ts

// fmt prints Dims as [2, 3], the way PyTorch prints sizes.
template <>
struct fmt::formatter<ts::Dims> : fmt::formatter<std::string_view> {
  template <typename Ctx>
  auto format(const ts::Dims& d, Ctx& ctx) const {
    auto out = fmt::format_to(ctx.out(), "[");
    for (int i = 0; i < d.size(); ++i) {
      if (i) out = fmt::format_to(out, ", ");
      out = fmt::format_to(out, "{}", d[i]);
    }
    return fmt::format_to(out, "]");
  }
};

namespace ts {

// Largest byte count a tensor may have: what int64 (and ptrdiff_t) can hold.
constexpr int64_t kMaxTensorBytes = INT64_MAX;

// a * b and a + b, exactly; ts::Error "<what>: <a> * <b> overflows int64" when
// the result does not fit.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what);
inline int64_t checked_add(int64_t a, int64_t b, std::string_view what);

// The number of elements of `shape` (1 for no dims, 0 when a size is 0, even
// if the other sizes multiply past int64). ts::Error naming `what` and the
// shape when a size is negative or the count does not fit in int64.
inline int64_t checked_numel(const Dims& shape, std::string_view what);

// Bytes of a contiguous tensor of `shape` and `dtype`: checked_numel times the
// element size. ts::Error naming `what`, the shape and the dtype when the
// count does not fit in int64.
inline int64_t checked_nbytes(const Dims& shape, DType dtype, std::string_view what);

// The storage a view (shape, strides, offset) reaches, in elements: one past
// the largest element index it can address, offset + sum((size_k - 1) *
// stride_k) + 1 for positive strides, or 0 when the view has no element.
// ts::Error naming `what` and the whole view when a size or the offset is
// negative, when a negative stride reaches before element 0, when the strides
// do not match the shape in length, or when the arithmetic overflows int64.
inline int64_t storage_extent(const Dims& shape, const Dims& strides, int64_t offset,
                              std::string_view what = "storage_extent");

// The product of the entries (1 for no dims, 0 when one is 0): a tensor's
// element count. ts::Error "numel: ..." naming the shape when the product does
// not fit in int64. Negative entries are multiplied like the others: callers
// that take a user's shape check the signs themselves, naming their op.
inline int64_t numel_of(const Dims& shape);

// Row-major strides for a shape: the last dim is contiguous; a size-0 or
// size-1 dim counts as 1. ts::Error naming `what` and the shape when a stride
// overflows (an empty shape such as [0, 2^32, 2^32, 2^32] has such strides).
inline Dims contiguous_strides(const Dims& shape, std::string_view what = "contiguous_strides");

// Wraps a possibly negative dim into [0, ndim); `op` names the caller in the error.
inline int wrap_dim(int64_t dim, int ndim, const char* op) {
  const int64_t n = ndim == 0 ? 1 : ndim;  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  TS_CHECK(dim >= -n && dim < n, "{}: dimension out of range (expected to be in range of [{}, {}], but got {})", op,
           -n, n - 1, dim);
  return static_cast<int>(dim < 0 ? dim + n : dim);
}

// "64x32": the form PyTorch's mm errors use.
std::string shape_x(const Dims& shape);

// ---- checked arithmetic: the definitions ------------------------------------------

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) [[unlikely]]
    fail("{}: {} * {} overflows int64 (the largest size is {})", what, a, b, INT64_MAX);
  return out;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) [[unlikely]]
    fail("{}: {} + {} overflows int64 (the largest size is {})", what, a, b, INT64_MAX);
  return out;
}

inline int64_t checked_numel(const Dims& shape, std::string_view what) {
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int64_t s : shape) {
    if (s < 0) [[unlikely]]
      fail("{}: negative dimension {} in shape {}", what, s, shape);
    empty = empty || s == 0;  // an empty tensor, however large its other dims
    overflow = overflow || __builtin_mul_overflow(n, s, &n);
  }
  if (empty) return 0;
  if (overflow) [[unlikely]]
    fail("{}: shape {} has more elements than int64 can count (more than {}): no tensor can have it", what, shape,
         INT64_MAX);
  return n;
}

inline int64_t numel_of(const Dims& shape) {
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int64_t s : shape) {
    empty = empty || s == 0;
    overflow = overflow || __builtin_mul_overflow(n, s, &n);
  }
  if (empty) return 0;
  if (overflow) [[unlikely]]
    fail("numel: shape {} has more elements than int64 can count (more than {}): no tensor can have it", shape,
         INT64_MAX);
  return n;
}

inline int64_t checked_nbytes(const Dims& shape, DType dtype, std::string_view what) {
  const int64_t n = checked_numel(shape, what);
  int64_t bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(element_size(dtype)), &bytes)) [[unlikely]]
    fail("{}: a tensor of shape {} and dtype {} would need {} elements of {} bytes: more than {} bytes", what, shape,
         dtype_short_name(dtype), n, element_size(dtype), kMaxTensorBytes);
  return bytes;
}

inline int64_t storage_extent(const Dims& shape, const Dims& strides, int64_t offset, std::string_view what) {
  if (shape.size() != strides.size()) [[unlikely]]
    fail("{}: shape {} and strides {} differ in length", what, shape, strides);
  if (offset < 0) [[unlikely]]
    fail("{}: negative storage offset {} (shape {}, strides {})", what, offset, shape, strides);
  bool empty = false;
  for (int64_t s : shape) {
    if (s < 0) [[unlikely]]
      fail("{}: negative dimension {} in shape {}", what, s, shape);
    empty = empty || s == 0;
  }
  if (empty) return 0;  // nothing is addressed
  // The lowest and highest element index the view reaches, from the offset.
  int64_t low = offset, high = offset;
  bool overflow = false;
  for (int i = 0; i < shape.size(); ++i) {
    int64_t reach;
    overflow = overflow || __builtin_mul_overflow(shape[i] - 1, strides[i], &reach);
    overflow = overflow || __builtin_add_overflow(reach < 0 ? low : high, reach, reach < 0 ? &low : &high);
  }
  if (overflow || high == INT64_MAX) [[unlikely]]
    fail("{}: shape {}, strides {} and offset {} address elements past index {}", what, shape, strides, offset,
         INT64_MAX - 1);
  if (low < 0) [[unlikely]]
    fail("{}: shape {}, strides {} and offset {} reach element {}, before the start of the storage", what, shape,
         strides, offset, low);
  return high + 1;
}

inline Dims contiguous_strides(const Dims& shape, std::string_view what) {
  Dims strides = Dims::filled(shape.size(), 1);
  for (int i = shape.size() - 2; i >= 0; --i) {
    const int64_t next = shape[i + 1] > 1 ? shape[i + 1] : 1;
    if (__builtin_mul_overflow(strides[i + 1], next, &strides[i])) [[unlikely]]
      fail("{}: the contiguous strides of shape {} overflow int64", what, shape);
  }
  return strides;
}

}  // namespace ts
