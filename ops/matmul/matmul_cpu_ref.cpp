// ops/matmul/matmul_cpu_ref.cpp: rung 0 of mm, bmm and addmm: the oracle.
//
// What:  out[i][j] = beta * c[i][j] + alpha * sum_k a[i][k] * b[k][j], a triple
//        loop that reads every operand through its strides (so t() views work
//        unchanged) and accumulates in double, rounding once at the store: the
//        oracle stays exact to f32 where an f32 running sum would drift (at
//        K = 2^25 an f32 sum of ones stops growing at 2^24).
// Cost:  2*M*N*K FLOPs with no reuse: O(M*N*K) loads. Fine as an oracle for
//        test shapes; the OpenBLAS rung is what runs by default.
// Try:   TS_VARIANT=mm/cpu/ref ./build/dev/tutorials/01_matmul_add --device cpu --size 64
#include "ops/checks.h"
#include "ops/cpu_loops.h"
#include "ops/matmul/matmul_gemm_cpu.h"
#include "ops/matmul/matmul.h"

namespace ts {

Tensor batch_matrix(const Tensor& x, int64_t index) {
  // An empty matrix addresses nothing: it keeps x's offset, whatever the batch stride (which
  // may be any value on an empty tensor, one whose multiples overflow included).
  const bool empty = x.shape()[1] == 0 || x.shape()[2] == 0;
  return Tensor(x.storage(), {x.shape()[1], x.shape()[2]}, {x.strides()[1], x.strides()[2]},
                empty ? x.offset() : x.offset() + index * x.strides()[0], x.dtype());
}

void gemm_cpu_ref(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta, Tensor& out) {
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  const Dims c_strides = c.defined() ? broadcast_strides(c, out.shape()) : Dims{0, 0};
  const bool use_c = c.defined() && beta != 0;  // beta == 0 ignores c entirely (NaN in c does not leak)
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      const T* pa = static_cast<const T*>(a.data_ptr());
      const T* pb = static_cast<const T*>(b.data_ptr());
      const T* pc = use_c ? static_cast<const T*>(c.data_ptr()) : nullptr;
      T* po = static_cast<T*>(out.data_ptr());
      const int64_t as0 = a.strides()[0], as1 = a.strides()[1], bs0 = b.strides()[0], bs1 = b.strides()[1];
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<double>(load_f32(pa, i * as0 + k * as1)) * load_f32(pb, k * bs0 + j * bs1);
          double v = alpha * acc;
          if (use_c) v += beta * load_f32(pc, i * c_strides[0] + j * c_strides[1]);
          store_f32(po, i * out.strides()[0] + j * out.strides()[1], static_cast<float>(v));
        }
    }
  });
}

void mm_cpu_ref(const Tensor& a, const Tensor& b, Tensor& out) { gemm_cpu_ref(a, b, Tensor{}, 1, 0, out); }

void bmm_cpu_ref(const Tensor& a, const Tensor& b, Tensor& out) {
  for (int64_t i = 0; i < out.shape()[0]; ++i) {
    Tensor out_i = batch_matrix(out, i);
    gemm_cpu_ref(batch_matrix(a, i), batch_matrix(b, i), Tensor{}, 1, 0, out_i);
  }
}

void addmm_cpu_ref(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  gemm_cpu_ref(a, b, c, attrs.alpha, attrs.beta, out);
}

}  // namespace ts
