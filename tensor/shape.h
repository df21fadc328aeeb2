// tensor/shape.h: Dims, the fixed-capacity list used for shapes and strides.
//
// Up to kMaxDims entries stored inline: making a view never touches the heap,
// which keeps `t()` and friends at a few nanoseconds. PyTorch order:
// outermost dimension first, strides counted in elements (not bytes).
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

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
    TS_CHECK(size_ < kMaxDims, "tensors have at most {} dims", kMaxDims);
    values_[size_++] = v;
  }
  void insert(int at, int64_t v) {
    TS_CHECK(size_ < kMaxDims, "tensors have at most {} dims", kMaxDims);
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

// Product of the entries (1 for no dims).
inline int64_t numel_of(const Dims& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Row-major strides for a shape: the last dim is contiguous.
inline Dims contiguous_strides(const Dims& shape) {
  Dims strides = Dims::filled(shape.size(), 1);
  for (int i = shape.size() - 2; i >= 0; --i) strides[i] = strides[i + 1] * (shape[i + 1] > 1 ? shape[i + 1] : 1);
  return strides;
}

// Wraps a possibly negative dim into [0, ndim); `op` names the caller in the error.
inline int wrap_dim(int64_t dim, int ndim, const char* op) {
  const int64_t n = ndim == 0 ? 1 : ndim;  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  TS_CHECK(dim >= -n && dim < n, "{}: dimension out of range (expected to be in range of [{}, {}], but got {})", op,
           -n, n - 1, dim);
  return static_cast<int>(dim < 0 ? dim + n : dim);
}

// "64x32": the form PyTorch's mm errors use.
std::string shape_x(const Dims& shape);

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
