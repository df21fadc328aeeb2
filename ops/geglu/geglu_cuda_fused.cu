// ops/geglu/geglu_cuda_fused.cu: the CUDA rungs of geglu: gelu_tanh(gate) * up in one pass.
//
// What changed from the eager pair (a gelu kernel, then a mul kernel):
//        one kernel instead of two, and the gelu result never goes to memory.
//        Eager moves 5 tensors of [rows, H] (gelu: read gate, write g;
//        mul: read g, read up, write out); fused moves 3. For the MLP's
//        [8192, 3072] bf16 that is 151 MB instead of 252 MB.
// How:   rows x packs grid. Each thread loads one 16-byte pack (8 bf16) of
//        gate and of up, computes in f32, stores one pack of out. gate and up
//        may be views with any row stride (the two halves of one merged GEMM
//        output [rows, 2H]), so the kernel is generic over shapes: no
//        recompilation per (rows, H), unlike a compiler's specialization.
// Rungs: geglu/cuda/strided (1): any layout, one element per thread, offsets
//        from the strides; geglu/cuda/rows (2): the packed kernel above, for
//        rows of 16-byte aligned packs (supports() checks the layout).
// Cost:  memory-bound: 3 * rows * H * sizeof(T) bytes; at ~4.3 TB/s the
//        [8192, 3072] bf16 case has a floor of ~35 us.
// Try:   ./build/dev/tutorials/03_mlp --path fused
//        ./build/dev/ts_ladder --op geglu --device cuda
#include "ops/cuda_common.cuh"
#include "ops/elementwise/gelu_math.h"
#include "ops/geglu/geglu.h"

namespace ts {

namespace {

constexpr int kRowThreads = 128;  // threads per block along a row, one 16-byte pack each

// blockIdx.y walks rows (grid-stride, so any row count fits), blockIdx.x and
// threadIdx.x the packs of a row. Rows of gate/up start row_stride elements apart.
template <typename T>
__global__ void geglu_fused_rows_kernel(const T* __restrict__ gate, int64_t gate_row_stride, const T* __restrict__ up,
                                        int64_t up_row_stride, T* __restrict__ out, int64_t rows, int64_t cols) {
  using P = Pack<T>;
  const int64_t packs_per_row = cols / P::kSize;
  const int64_t pack = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pack >= packs_per_row) return;
  const int64_t col = pack * P::kSize;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    // Both loads issue before any arithmetic: two 16-byte requests in flight per thread.
    const P g = *reinterpret_cast<const P*>(gate + row * gate_row_stride + col);
    const P u = *reinterpret_cast<const P*>(up + row * up_row_stride + col);
    P o;
#pragma unroll
    for (int i = 0; i < P::kSize; ++i) o.v[i] = from_float<T>(gelu_tanh_fast_f32(to_float(g.v[i])) * to_float(u.v[i]));
    *reinterpret_cast<P*>(out + row * cols + col) = o;
  }
}

// Any layout: one element per thread, offsets from the strides.
template <typename T>
__global__ void geglu_fused_strided_kernel(const T* gate, const T* up, T* out, int64_t n, OffsetCalc<2> calc) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t o[2];
    calc.offsets(i, o);
    out[i] = from_float<T>(gelu_tanh_fast_f32(to_float(gate[o[0]])) * to_float(up[o[1]]));
  }
}

// gate and up read as [rows, cols] with unit column stride and rows 16-byte aligned.
bool rows_are_packable(const Tensor& x, int64_t cols, int64_t pack) {
  if (x.dim() == 0 || x.strides()[x.dim() - 1] != 1 || cols % pack != 0) return false;
  // Every leading dim must fold into one row index with a single row stride.
  const int64_t row_stride = x.dim() >= 2 ? x.strides()[x.dim() - 2] : cols;
  for (int d = x.dim() - 2; d > 0; --d)
    if (x.shape()[d] != 1 && x.strides()[d - 1] != x.strides()[d] * x.shape()[d]) return false;
  return aligned16(x.data_ptr()) && (row_stride * static_cast<int64_t>(x.element_size())) % 16 == 0;
}

}  // namespace

bool geglu_cuda_rows_supports(const OpCall& call, std::string* why) {
  const Tensor &gate = call.input(0), &up = call.input(1), &out = call.out;
  const int64_t cols = out.dim() ? out.shape()[out.dim() - 1] : 1;
  const int64_t pack = 16 / static_cast<int64_t>(out.element_size());
  if (rows_are_packable(gate, cols, pack) && rows_are_packable(up, cols, pack) && aligned16(out.data_ptr())) return true;
  if (why) *why = fmt::format("needs gate and up as rows of 16-byte aligned packs (unit column stride, {} | {} columns, "
                              "one row stride); got gate {} strides {}, up {} strides {}",
                              pack, cols, gate.shape(), gate.strides(), up.shape(), up.strides());
  return false;
}

void geglu_cuda_rows(const Tensor& gate, const Tensor& up, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t cols = out.dim() ? out.shape()[out.dim() - 1] : 1;
  const int64_t rows = n / cols;
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int64_t kPack = Pack<T>::kSize;
    const int64_t gate_rs = gate.dim() >= 2 ? gate.strides()[gate.dim() - 2] : cols;
    const int64_t up_rs = up.dim() >= 2 ? up.strides()[up.dim() - 2] : cols;
    const dim3 grid(static_cast<unsigned>(ceil_div(cols / kPack, kRowThreads)),
                    static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
    launch(geglu_fused_rows_kernel<T>, grid, kRowThreads, static_cast<const T*>(gate.data_ptr()), gate_rs,
           static_cast<const T*>(up.data_ptr()), up_rs, static_cast<T*>(out.data_ptr()), rows, cols);
  });
}

void geglu_cuda_strided(const Tensor& gate, const Tensor& up, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const OffsetCalc<2> calc = make_offset_calc<2>(out.shape(), {gate.strides(), up.strides()});
  visit_float_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(geglu_fused_strided_kernel<T>, grid_for(n), kThreads, static_cast<const T*>(gate.data_ptr()),
           static_cast<const T*>(up.data_ptr()), static_cast<T*>(out.data_ptr()), n, calc);
  });
}

}  // namespace ts
