// tensor/tensor.cpp: Tensor metadata, element access and the small parsers.
#include "tensor/tensor.h"

#include <charconv>
#include <string>

#include <algorithm>
#include <vector>

#include "tensor/cuda_device.h"

namespace ts {

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32" || name == "float") return DType::f32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "f16" || name == "float16" || name == "half") return DType::f16;
  if (name == "bool") return DType::b8;
  if (name == "i64" || name == "int64" || name == "long") return DType::i64;
  fail("unknown dtype '{}' (expected f32, bf16, f16, bool or i64)", name);
}

std::string Device::str() const { return is_cpu() ? "cpu" : fmt::format("cuda:{}", index); }

Device Device::parse(std::string_view text) {
  if (text == "cpu") return kCPU;
  if (text == "cuda") return kCUDA;
  if (text.starts_with("cuda:")) {
    int index = -1;
    const auto digits = text.substr(5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc{} && end == digits.data() + digits.size() && index >= 0) return Device{DeviceType::cuda, index};
  }
  fail("unknown device '{}' (expected cpu, cuda or cuda:N)", text);
}

std::string shape_x(const Dims& shape) {
  std::string s;
  for (int i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

int64_t Tensor::size(int64_t dim) const { return shape_[wrap_dim(dim, this->dim(), "size")]; }
int64_t Tensor::stride(int64_t dim) const { return strides_[wrap_dim(dim, this->dim(), "stride")]; }

bool Tensor::is_contiguous() const {
  // PyTorch's rule: size-1 dims may have any stride; empty tensors are contiguous.
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 0) return true;
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    // An overflow means a zero-size dim further out (a tensor's numel fits in int64): empty.
    if (__builtin_mul_overflow(expected, shape_[i], &expected)) return true;
  }
  return true;
}

Tensor::Tensor(std::shared_ptr<Storage> storage, const Dims& shape, const Dims& strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)), shape_(shape), strides_(strides), offset_(offset), dtype_(dtype) {
  TS_CHECK(storage_ != nullptr, "Tensor: a view of shape {} needs a storage, got none", shape);
  checked_numel(shape, "Tensor");  // numel() is exact for every tensor that exists
  const int64_t extent = storage_extent(shape, strides, offset, "Tensor");
  const int64_t itemsize = static_cast<int64_t>(ts::element_size(dtype));
  const int64_t capacity = static_cast<int64_t>(storage_->nbytes()) / itemsize;
  TS_CHECK(extent <= capacity,
           "Tensor: a view of shape {} with strides {} and offset {} reaches element {}, but its storage holds {} "
           "{} elements ({} bytes)",
           shape, strides, offset, extent - 1, capacity, dtype_short_name(dtype), storage_->nbytes());
  checked_mul(offset, itemsize, "Tensor: storage offset in bytes");  // data_ptr() of an empty view too
}

const char* detail::host_data(const Tensor& x, std::vector<char>& host) {
  const char* base = static_cast<const char*>(x.data_ptr());
  if (x.device().is_cpu() || x.numel() == 0) return base;
  const int64_t esize = static_cast<int64_t>(x.element_size());
  int64_t lowest = 0, highest = 0;  // element offsets of the view's extreme elements, relative to data_ptr()
  for (int d = 0; d < x.dim(); ++d) {
    const int64_t reach = x.strides()[d] * (x.shape()[d] - 1);
    (reach < 0 ? lowest : highest) += reach;
  }
  host.resize(static_cast<size_t>((highest - lowest + 1) * esize));
  cuda::copy_to_host(host.data(), base + lowest * esize, host.size(), x.device().index);
  return host.data() - lowest * esize;
}

Tensor make_contiguous_tensor(const Dims& shape, Options options, std::string_view what) {
  for (int64_t s : shape) TS_CHECK(s >= 0, "{}: negative dimension {} in shape {}", what, s, shape);
  const int64_t nbytes = checked_nbytes(shape, options.dtype, what);
  std::shared_ptr<Storage> storage;
  try {
    storage = std::make_shared<Storage>(static_cast<size_t>(nbytes), options.device);
  } catch (const Error& e) {  // out of memory, no CUDA: say which tensor could not be made
    fail("{}: cannot allocate a tensor of shape {} ({}, {}): {}", what, shape, dtype_short_name(options.dtype),
         options.device.str(), e.what());
  }
  return Tensor(std::move(storage), shape, contiguous_strides(shape, what), 0, options.dtype);
}

namespace {

// A float as an integer, defined for every value: NaN, infinities and values
// outside int64's range give INT64_MIN, what x86's conversion (cvttsd2si) and
// CUDA's __double2ll_rz return, the rule the ops' conversions follow too. A C++
// cast of those values is undefined behavior.
template <typename Out>
Out float_to(double value) {
  if constexpr (std::is_same_v<Out, int64_t>) {
    // -2^63 is exact in double; 2^63 is the first value past the range. NaN fails both comparisons.
    if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) return INT64_MIN;
  }
  return static_cast<Out>(value);
}

template <typename Out>
Out convert_element(const void* p, DType dtype) {
  return visit_dtype(dtype, [&](auto tag) -> Out {
    using T = decltype(tag);
    const T value = *static_cast<const T*>(p);
    if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16> || std::is_same_v<T, float>) {
      return float_to<Out>(static_cast<float>(value));
    } else {
      return static_cast<Out>(value);
    }
  });
}

}  // namespace

template <typename T>
std::vector<T> Tensor::to_vector() const {
  TS_CHECK(defined(), "to_vector: tensor is undefined");
  std::vector<T> values;
  values.reserve(static_cast<size_t>(numel()));
  if (numel() == 0) return values;
  const int64_t esize = static_cast<int64_t>(element_size());
  std::vector<char> host;
  const char* base = detail::host_data(*this, host);
  // Walk the index space in row-major order, following the strides.
  Dims index = Dims::filled(dim(), 0);
  int64_t offset = 0;
  for (int64_t n = numel(); n > 0; --n) {
    values.push_back(convert_element<T>(base + offset * esize, dtype_));
    for (int d = dim() - 1; d >= 0; --d) {
      if (shape_[d] == 1) continue;  // its stride is never used, and may be as large as INT64_MAX
      offset += strides_[d];
      if (++index[d] < shape_[d]) break;
      offset -= strides_[d] * shape_[d];
      index[d] = 0;
    }
  }
  return values;
}

template <typename T>
T Tensor::item() const {
  TS_CHECK(defined() && numel() == 1, "item: a Tensor with {} elements cannot be converted to a scalar",
           defined() ? numel() : 0);
  return to_vector<T>()[0];
}

template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template bool Tensor::item<bool>() const;

}  // namespace ts

#ifdef TS_GDB_PRINTER
// Debug builds: ask gdb to load the ts::Tensor pretty-printer with any binary
// that links this file (an entry of type 1, "python file", in .debug_gdb_scripts).
asm(".pushsection \".debug_gdb_scripts\", \"MS\",@progbits,1\n"
    ".byte 1\n"
    ".asciz \"" TS_GDB_PRINTER "\"\n"
    ".popsection\n");
#endif
