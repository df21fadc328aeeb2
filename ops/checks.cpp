// ops/checks.cpp: shared input checks.
#include "ops/checks.h"

#include <cmath>
#include <limits>

#include "ops/int_conversion.h"
#include "tensor/cuda_device.h"

namespace ts {

void check_inputs_on_one_device(OpCall& call) {
  bool first = true;
  for (int i = 0; i < call.num_in; ++i) {
    const Tensor* x = call.in[i];
    if (x == nullptr) continue;
    TS_CHECK(x->defined(), "{}: input {} is an undefined tensor", call.op.name, i);
    if (first) {
      call.device = x->device();
      first = false;
    } else {
      TS_CHECK(x->device() == call.device,
               "{}: expected all tensors to be on the same device, but found {} (input 0) and {} (input {})",
               call.op.name, call.device.str(), x->device().str(), i);
    }
  }
  if (!first) check_device_available(call.device, call.op.name);
}

namespace {

// The largest finite value of a floating dtype.
double largest_finite(DType dtype) {
  switch (dtype) {
    case DType::bf16: return 3.3895313892515355e38;  // 0x7f7f
    case DType::f16: return 65504.0;                 // 0x7bff
    default: return std::numeric_limits<float>::max();
  }
}

}  // namespace

void check_fill_value(const char* op_name, double value, DType dtype, const Dims& shape) {
  TS_CHECK(dtype != DType::i64 || fits_int64(value),
           "{}: value {} cannot be converted to type int64_t without overflow (the tensor is i64 of shape {})",
           op_name, value, shape);
  // A finite value past the dtype's range would be stored as inf: refused, as PyTorch refuses it
  // (inf and NaN themselves are values every floating dtype holds).
  TS_CHECK(!is_floating(dtype) || !std::isfinite(value) || std::fabs(value) <= largest_finite(dtype),
           "{}: value {} cannot be converted to type {} without overflow ({} holds magnitudes up to {}; the tensor is "
           "of shape {})",
           op_name, value, dtype_short_name(dtype), dtype_short_name(dtype), largest_finite(dtype), shape);
}

void check_floating(const OpCall& call, const Tensor& x, const char* what) {
  TS_CHECK(is_floating(x.dtype()), "{}: {} must be a floating tensor (f32, bf16 or f16), got {} with shape {}",
           call.op.name, what, dtype_short_name(x.dtype()), x.shape());
}

void check_same_dtype(const OpCall& call, const Tensor& a, const Tensor& b) {
  TS_CHECK(a.dtype() == b.dtype(), "{}: expected both inputs to have the same dtype, got {} {} and {} {}",
           call.op.name, dtype_short_name(a.dtype()), a.shape(), dtype_short_name(b.dtype()), b.shape());
}

Dims broadcast_shapes(const OpCall& call, const Dims& a, const Dims& b) { return broadcast_shapes(call.op.name, a, b); }

Dims broadcast_shapes(const char* op_name, const Dims& a, const Dims& b) {
  const int n = std::max(a.size(), b.size());
  Dims out = Dims::filled(n, 1);
  for (int i = 0; i < n; ++i) {  // align from the right
    const int ia = a.size() - n + i, ib = b.size() - n + i;
    const int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    TS_CHECK(sa == sb || sa == 1 || sb == 1,
             "{}: shapes {} and {} cannot be broadcast together (dim {}: {} vs {})", op_name, a, b, i - n,
             sa, sb);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

int64_t broadcast_period(const Tensor& x, const Dims& shape) {
  if (!x.is_contiguous()) return 0;
  int xd = x.dim();
  while (xd > 0 && x.shape()[x.dim() - xd] == 1) --xd;  // leading 1s broadcast like absent dims
  if (xd > shape.size()) return 0;
  for (int i = 1; i <= xd; ++i)
    if (x.shape()[x.dim() - i] != shape[shape.size() - i]) return 0;
  return x.numel();
}

Dims broadcast_strides(const Tensor& x, const Dims& shape) {
  Dims strides = Dims::filled(shape.size(), 0);
  const int lead = shape.size() - x.dim();
  for (int i = 0; i < x.dim(); ++i) strides[lead + i] = x.shape()[i] == 1 ? 0 : x.strides()[i];
  return strides;
}

void check_no_internal_overlap(const OpCall& call, const Tensor& dst) {
  for (int i = 0; i < dst.dim(); ++i)
    TS_CHECK(!(dst.strides()[i] == 0 && dst.shape()[i] > 1),
             "{}: unsupported operation: more than one element of the written-to tensor (shape {}, strides {}) "
             "refers to a single memory location. Please clone() the tensor before performing the operation.",
             call.op.name, dst.shape(), dst.strides());
}

namespace {
// [first, last] byte range touched by x (strides may be negative in as_strided views).
std::pair<const char*, const char*> byte_range(const Tensor& x) {
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < x.dim(); ++i) {
    const int64_t extent = (x.shape()[i] - 1) * x.strides()[i];
    (extent < 0 ? lo : hi) += extent;
  }
  const char* base = static_cast<const char*>(x.data_ptr());
  const int64_t es = static_cast<int64_t>(x.element_size());
  return {base + lo * es, base + hi * es + es - 1};
}
}  // namespace

void check_no_partial_overlap(const OpCall& call, const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0 || src.numel() == 0 || dst.storage() != src.storage()) return;
  const bool same_view = dst.data_ptr() == src.data_ptr() && dst.shape() == src.shape() &&
                         dst.strides() == src.strides() && dst.dtype() == src.dtype();
  if (same_view) return;
  const auto [d0, d1] = byte_range(dst);
  const auto [s0, s1] = byte_range(src);
  TS_CHECK(d1 < s0 || s1 < d0,
           "{}: unsupported operation: some elements of the input tensor (shape {}, strides {}) and the written-to "
           "tensor (shape {}, strides {}) refer to a single memory location. Please clone() the input first.",
           call.op.name, src.shape(), src.strides(), dst.shape(), dst.strides());
}

}  // namespace ts
