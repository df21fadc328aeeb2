// ops/matmul/matmul_cuda_naive.cu: rung 2 of mm, bmm and addmm: one thread per output element.
//
// What changed from the CPU rungs: the M x N outputs are computed in parallel,
//        one thread each, every thread walking its whole row of A and column of
//        B through their strides (t() views need no copy) with an f32
//        accumulator. Neighbouring threads take neighbouring columns, so a
//        warp's reads of B and writes of out are coalesced; A's element is the
//        same for the whole warp (a broadcast).
// Cost:  2*M*N*K FLOPs, but no reuse: each thread loads 2K elements, so
//        global-memory traffic is ~2*M*N*K elements and the kernel runs at a
//        few TFLOP/s at best on an H200 (~800 TFLOP/s in cuBLAS).
// Try:   TS_VARIANT=mm/cuda/naive ./build/dev/ts_tests -tc='cuda*'
#include "ops/cuda_common.cuh"
#include "ops/matmul/matmul_cuda.h"
#include "ops/matmul/matmul.h"

namespace ts {

constexpr int kMmNaiveBlock = 16;  // 16 x 16 threads per block, one output each

template <typename T>
__global__ void mm_naive_kernel(GemmProblem p) {
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // n
  if (col >= p.N) return;
  // Rows and batches past the grid's y/z limits (65535 blocks) loop.
  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    for (int64_t row = int64_t(blockIdx.y) * blockDim.y + threadIdx.y; row < p.M; row += int64_t(gridDim.y) * blockDim.y) {
      const T* a = static_cast<const T*>(p.a) + z * p.a_batch + row * p.a_row;  // A[z, row, :]
      const T* b = static_cast<const T*>(p.b) + z * p.b_batch + col * p.b_col;  // B[z, :, col]
      float acc = 0.0f;
      for (int64_t k = 0; k < p.K; ++k) acc += to_float(a[k * p.a_col]) * to_float(b[k * p.b_row]);
      float v = p.alpha * acc;
      if (p.c != nullptr) v += p.beta * to_float(static_cast<const T*>(p.c)[row * p.c_row + col * p.c_col]);
      static_cast<T*>(p.out)[z * p.out_batch + row * p.out_row + col * p.out_col] = from_float<T>(v);
    }
  }
}

namespace {

void launch_mm_naive(const GemmProblem& p, DType dtype) {
  if (p.M == 0 || p.N == 0 || p.batch == 0) return;
  const dim3 block(kMmNaiveBlock, kMmNaiveBlock);
  const dim3 grid(static_cast<unsigned>(ceil_div(p.N, kMmNaiveBlock)),
                  static_cast<unsigned>(std::min<int64_t>(ceil_div(p.M, kMmNaiveBlock), 65535)),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  visit_float_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(mm_naive_kernel<T>, grid, block, p);
  });
}

}  // namespace

void mm_cuda_naive(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_mm_naive(gemm_problem(a, b, nullptr, 0, 1, out), out.dtype());
}
void bmm_cuda_naive(const Tensor& a, const Tensor& b, Tensor& out) {
  launch_mm_naive(gemm_problem(a, b, nullptr, 0, 1, out), out.dtype());
}
void addmm_cuda_naive(const Tensor& c, const Tensor& a, const Tensor& b, const AddmmAttrs& attrs, Tensor& out) {
  launch_mm_naive(gemm_problem(a, b, &c, attrs.beta, attrs.alpha, out), out.dtype());
}

}  // namespace ts
