// ops/attention/attention_flash_problem.h: one attention call as the flash kernels see it.
//
//   q [B, H, S, D], k [B, H, L, D], v [B, H, L, D] -> out [B, H, S, D] (contiguous)
// Every input is a pointer plus element strides, so transposed views are read in
// place. Plain data: passed to kernels by value. The checks the flash rungs
// share live here too: every rung's (rank, matching shapes, dtype, device) and
// the tensor-core rungs' (head dim, strides).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "ops/attention/attention_flash.h"

namespace ts {

struct FlashProblem {
  int64_t B = 0, H = 0, S = 0, L = 0, D = 0;
  const void* q = nullptr;
  int64_t q_b = 0, q_h = 0, q_s = 0, q_d = 0;  // element strides
  const void* k = nullptr;
  int64_t k_b = 0, k_h = 0, k_s = 0, k_d = 0;
  const void* v = nullptr;
  int64_t v_b = 0, v_h = 0, v_s = 0, v_d = 0;
  void* out = nullptr;  // contiguous [B, H, S, D]
  float scale = 0;      // softmax(scores * scale)
  bool causal = false;  // query i sees keys j <= i
};

inline FlashProblem flash_problem(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaAttrs& attrs,
                                  Tensor& out) {
  FlashProblem p;
  p.B = q.shape()[0];
  p.H = q.shape()[1];
  p.S = q.shape()[2];
  p.L = k.shape()[2];
  p.D = q.shape()[3];
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  p.q_b = q.strides()[0], p.q_h = q.strides()[1], p.q_s = q.strides()[2], p.q_d = q.strides()[3];
  p.k_b = k.strides()[0], p.k_h = k.strides()[1], p.k_s = k.strides()[2], p.k_d = k.strides()[3];
  p.v_b = v.strides()[0], p.v_h = v.strides()[1], p.v_s = v.strides()[2], p.v_d = v.strides()[3];
  p.out = out.data_ptr();
  p.scale = static_cast<float>(attrs.scale != 0 ? attrs.scale : 1.0 / std::sqrt(static_cast<double>(p.D)));
  p.causal = attrs.is_causal;
  return p;
}

// Records `reason` in *why (when asked for it) and answers false.
inline bool flash_refuse(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return false;
}

// The checks every flash rung shares. `rung` names it in the reason ("flash_v2").
inline bool flash_common_supports(const char* rung, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const SdpaAttrs& attrs, std::string* why) {
  if (!q.defined() || !k.defined() || !v.defined())
    return flash_refuse(why, fmt::format("sdpa {}: q, k and v must all be defined tensors", rung));
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    return flash_refuse(why, fmt::format("sdpa {}: expected 4-D q, k, v [B, H, seq, D], got {}, {}, {}", rung,
                                         q.shape(), k.shape(), v.shape()));
  const Dims& qs = q.shape();
  const Dims& ks = k.shape();
  const Dims& vs = v.shape();
  if (ks[0] != qs[0] || ks[1] != qs[1] || ks[3] != qs[3] || vs != ks)
    return flash_refuse(why, fmt::format("sdpa {}: expected q [B, H, S, D] and k, v [B, H, L, D], got q {}, k {}, v {}",
                                         rung, qs, ks, vs));
  if (q.dtype() != DType::bf16 && q.dtype() != DType::f16)
    return flash_refuse(why, fmt::format("sdpa {}: dtype {} is not supported (bf16 or f16)", rung,
                                         dtype_short_name(q.dtype())));
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    return flash_refuse(why, fmt::format("sdpa {}: q, k, v must share one dtype, got {}, {}, {}", rung,
                                         dtype_short_name(q.dtype()), dtype_short_name(k.dtype()),
                                         dtype_short_name(v.dtype())));
  // flash_v2 and v3 take exp2(score * scale * log2(e) - max * scale * log2(e)) in float: a scale
  // that is 0 there (an explicit one below about 1e-38, or one flushed as a subnormal) turns a
  // masked score's -inf into NaN, an infinite or NaN one every score. flash_v1 refuses the same
  // scales, so that the rungs take the same calls; the math rung, in double, takes any.
  if (attrs.scale != 0) {
    const float scale_log2 = static_cast<float>(attrs.scale) * 1.4426950408889634f;
    if (!std::isnormal(scale_log2))
      return flash_refuse(why, fmt::format("sdpa {}: scale {} is {} in float once multiplied by log2(e); the "
                                           "kernels need a normal, finite float there (the math rung takes any "
                                           "scale)", rung, attrs.scale, scale_log2));
  }
  return true;
}

// The layout rules of the tensor-core rungs (v2, v3): a head dim the rung has a kernel for (in
// `head_dims`); q, k, v with a unit last stride, every other stride a multiple of 8 elements (16
// bytes; 0 too, a broadcast dim) or its dim of size 1, and 16-byte aligned data. `mover` says what
// moves the 16-byte units.
inline bool flash_tensor_core_supports(const char* rung, const char* mover, std::initializer_list<int64_t> head_dims,
                                       const Tensor& q, const Tensor& k, const Tensor& v, std::string* why) {
  const int64_t D = q.shape()[3];
  if (std::find(head_dims.begin(), head_dims.end(), D) == head_dims.end()) {
    std::string dims;  // "64, 96 or 128"
    for (auto it = head_dims.begin(); it != head_dims.end(); ++it)
      dims += fmt::format("{}{}", it == head_dims.begin() ? "" : it + 1 == head_dims.end() ? " or " : ", ", *it);
    return flash_refuse(why, fmt::format("sdpa {}: head dim {} is not supported ({}; flash_v1 takes any head dim "
                                         "up to 128)", rung, D, dims));
  }
  auto rows_are_chunks = [](const Tensor& x) {
    if (x.strides()[3] != 1 && x.shape()[3] != 1) return false;
    for (int d = 0; d < 3; ++d)
      if (x.shape()[d] != 1 && x.strides()[d] % 8 != 0) return false;
    return reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0;
  };
  const char* names[] = {"q", "k", "v"};
  const Tensor* inputs[] = {&q, &k, &v};
  for (int n = 0; n < 3; ++n)
    if (!rows_are_chunks(*inputs[n]))
      return flash_refuse(why, fmt::format("sdpa {}: {} (shape {}, strides {}) must have a unit last stride, "
                                           "other strides multiples of 8 elements and 16-byte aligned data "
                                           "({} moves 16 bytes at a time)",
                                           rung, names[n], inputs[n]->shape(), inputs[n]->strides(), mover));
  return true;
}

// Device checks come last, so every other reason can be asked for with CPU tensors.
inline bool flash_device_supports(const char* rung, const Tensor& q, const Tensor& k, const Tensor& v,
                                  std::string* why) {
  if (!q.device().is_cuda())
    return flash_refuse(why, fmt::format("sdpa {}: runs on cuda, q is on {}", rung, device_type_name(q.device().type)));
  if (k.device() != q.device() || v.device() != q.device())
    return flash_refuse(why, fmt::format("sdpa {}: q, k, v must be on one device", rung));
  return true;
}

// The launchers' own checks of out (the caller allocates it).
inline void flash_check_out(const char* rung, const Tensor& q, const Tensor& out) {
  TS_CHECK(out.defined() && out.shape() == q.shape() && out.dtype() == q.dtype() && out.device() == q.device() &&
               out.is_contiguous(),
           "sdpa {}: out must be a contiguous {} {} tensor of shape {} on q's device, got {}", rung,
           dtype_short_name(q.dtype()), device_type_name(q.device().type), q.shape(),
           out.defined() ? fmt::format("{} {} {}{}", dtype_short_name(out.dtype()), device_type_name(out.device().type),
                                       out.shape(), out.is_contiguous() ? "" : " (not contiguous)")
                         : std::string("an undefined tensor"));
}

}  // namespace ts
