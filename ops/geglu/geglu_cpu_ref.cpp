// ops/geglu/geglu_cpu_ref.cpp: rung 0 of geglu: out = gelu_tanh(gate) * up, the oracle.
//
// What:  one strided loop over the output, f32 arithmetic, one rounding at
//        the store: exactly what gelu followed by mul computes, minus the
//        rounding of the intermediate to the storage dtype.
// Cost:  reads gate and up once, writes out once.
#include "ops/cpu_loops.h"
#include "ops/elementwise/gelu_math.h"
#include "ops/geglu/geglu.h"

namespace ts {

void geglu_cpu_ref(const Tensor& gate, const Tensor& up, Tensor& out) {
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* pg = static_cast<const T*>(gate.data_ptr());
      const T* pu = static_cast<const T*>(up.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      for_each_offset<3>(out.shape(), {gate.strides(), up.strides(), out.strides()}, [&](const auto& o) {
        store_f32(po, o[2], gelu_tanh_f32(load_f32(pg, o[0])) * load_f32(pu, o[1]));
      });
    }
  });
}

}  // namespace ts
