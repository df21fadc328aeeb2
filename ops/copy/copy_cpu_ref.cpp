// ops/copy/copy_cpu_ref.cpp: rung 0 of copy_ on the host: strided read, dtype
// conversion, broadcast of the source over the destination.
//
// Cost: one read of the source, one write of the destination. Conversion goes
// through float for 16-bit types (exact widening, one rounding) and directly
// otherwise (int64 <-> float follows C++ conversion, as PyTorch's does).
#include <cstring>

#include "ops/checks.h"
#include "ops/cpu_loops.h"
#include "ops/copy/copy.h"
#include "ops/int_conversion.h"

namespace ts {

namespace {

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<From, bf16> || std::is_same_v<From, f16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bf16> || std::is_same_v<To, f16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else {
    return numeric_cast<To>(v);
  }
}

}  // namespace

bool copy_cpu_ref_supports(const OpCall& call, std::string* why) {
  if (call.input(0).device().is_cpu() && call.input(1).device().is_cpu()) return true;
  if (why) *why = fmt::format("copies host to host only (dst on {}, src on {})", call.input(0).device().str(),
                              call.input(1).device().str());
  return false;
}

void copy_cpu_ref(const Tensor&, const Tensor& src, Tensor& dst) {
  visit_dtype(dst.dtype(), [&](auto dst_tag) {
    using To = decltype(dst_tag);
    visit_dtype(src.dtype(), [&](auto src_tag) {
      using From = decltype(src_tag);
      To* pd = static_cast<To*>(dst.data_ptr());
      const From* ps = static_cast<const From*>(src.data_ptr());
      if (std::is_same_v<To, From> && dst.is_contiguous() && src.is_contiguous() && src.shape() == dst.shape()) {
        if (static_cast<const void*>(pd) == static_cast<const void*>(ps)) return;  // copy_(x, x): nothing to move
        std::memcpy(static_cast<void*>(pd), ps, static_cast<size_t>(dst.numel()) * sizeof(To));
        return;
      }
      for_each_offset<2>(dst.shape(), {dst.strides(), broadcast_strides(src, dst.shape())},
                         [&](const auto& o) { pd[o[0]] = convert<To>(ps[o[1]]); });
    });
  });
}

}  // namespace ts
