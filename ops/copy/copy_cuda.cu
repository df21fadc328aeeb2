// ops/copy/copy_cuda.cu: rung 1 of copy_ whenever a GPU is involved: device to
// device, host to device, device to host. clone, contiguous, to(dtype) and
// to(device) all come here through copy_.
//
// What changed from rung 0 (copy_cpu_ref.cpp): two mechanisms.
//   - Dense and alike (same dtype and shape, both contiguous): one
//     cudaMemcpyAsync on the current stream (a Memcpy HtoD/DtoH/DtoD row in a trace).
//   - Anything else on the device: copy_strided_kernel, one thread per
//     destination element: read the source through its strides (0 on broadcast
//     dims), convert the dtype, write through the destination's strides.
//   Across devices a strided or converting copy is staged: the host side is made
//   contiguous in its own dtype first, the bytes cross the bus unchanged, and
//   the layout/dtype work happens on the GPU (a device temporary holds them).
// Cost:  one read and one write per element; the bus (PCIe/NVLink-C2C) is far
//        slower than HBM, so host<->device copies dominate when they happen.
// Try:   ./build/dev/ts_tests -tc='cuda: every variant*'
#include "ops/checks.h"
#include "ops/cuda_common.cuh"
#include "ops/ops.h"
#include "ops/variants.h"
#include "tensor/cuda_check.h"

namespace ts {

// The CPU reference's conversion rules: 16-bit floats go through float; to
// bool is "!= 0"; everything else is a C++ conversion.
template <typename To, typename From>
__device__ __forceinline__ To convert_element(From v) {
  if constexpr (is_half_type<From>) {
    return convert_element<To>(to_float(v));
  } else if constexpr (is_half_type<To>) {
    return from_float<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else {
    return static_cast<To>(v);
  }
}

// dst[o[0]] = convert(src[o[1]]) for every destination element.
template <typename To, typename From>
__global__ void copy_strided_kernel(To* __restrict__ dst, const From* __restrict__ src, int64_t n,
                                    OffsetCalc<2> calc) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o[2];
    calc.offsets(i, o);
    dst[o[0]] = convert_element<To>(src[o[1]]);
  }
}

namespace {

bool dense_and_alike(const Tensor& dst, const Tensor& src) {
  return dst.dtype() == src.dtype() && dst.shape() == src.shape() && dst.is_contiguous() && src.is_contiguous();
}

// dst (on the GPU) = src (on the same GPU) broadcast to dst's shape, converted to dst's dtype.
void copy_on_device(Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dense_and_alike(dst, src)) {
    TS_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(n) * dst.element_size(),
                                  cudaMemcpyDeviceToDevice, cuda::current_stream()));
    return;
  }
  const auto calc = make_offset_calc<2>(dst.shape(), {dst.strides(), broadcast_strides(src, dst.shape())});
  visit_any_dtype(dst.dtype(), [&](auto dst_tag) {
    using To = typename decltype(dst_tag)::type;
    visit_any_dtype(src.dtype(), [&](auto src_tag) {
      using From = typename decltype(src_tag)::type;
      launch(copy_strided_kernel<To, From>, grid_for(n), kThreads, static_cast<To*>(dst.data_ptr()),
             static_cast<const From*>(src.data_ptr()), n, calc);
    });
  });
}

// Host src -> device dst.
void copy_host_to_device(Tensor& dst, const Tensor& src) {
  const Tensor host = contiguous(src);  // a no-op when src is already contiguous
  const size_t bytes = static_cast<size_t>(host.numel()) * host.element_size();
  if (dense_and_alike(dst, host)) {
    // From pageable memory the call returns once the bytes are staged, so `host` may die right after.
    TS_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), host.data_ptr(), bytes, cudaMemcpyHostToDevice,
                                  cuda::current_stream()));
    return;
  }
  Tensor staged = make_contiguous_tensor(host.shape(), {host.dtype(), dst.device()});
  TS_CUDA_CHECK(cudaMemcpyAsync(staged.data_ptr(), host.data_ptr(), bytes, cudaMemcpyHostToDevice,
                                cuda::current_stream()));
  copy_on_device(dst, staged);
}

// Device src -> host dst. Returns when the bytes are on the host.
void copy_device_to_host(Tensor& dst, const Tensor& src) {
  Tensor dense = src;
  if (!dense_and_alike(dst, src)) {  // broadcast/convert/gather on the GPU into dst's dtype and shape
    dense = make_contiguous_tensor(dst.shape(), {dst.dtype(), src.device()});
    copy_on_device(dense, src);
  }
  const size_t bytes = static_cast<size_t>(dense.numel()) * dense.element_size();
  Tensor landing = dst.is_contiguous() ? dst : make_contiguous_tensor(dst.shape(), {dst.dtype(), kCPU});
  TS_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), dense.data_ptr(), bytes, cudaMemcpyDeviceToHost,
                                cuda::current_stream()));
  TS_CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream()));  // the host reads these bytes next
  if (!dst.is_contiguous()) copy_(dst, landing);                 // host to host: the CPU rung scatters
}

}  // namespace

bool copy_cuda_supports(const OpCall& call, std::string* why) {
  const Device dst = call.input(0).device(), src = call.input(1).device();
  if (dst.is_cuda() && src.is_cuda() && dst != src) {
    if (why) *why = fmt::format("copies between two GPUs ({} and {}) are not supported", src.str(), dst.str());
    return false;
  }
  if (dst.is_cpu() && src.is_cpu()) {
    if (why) *why = "host to host copies run on the CPU";
    return false;
  }
  return true;
}

// dst: any dtype, any strides (no overlap: prepare checked); src: any dtype, broadcastable to dst.
void copy_cuda(OpCall& call) {
  Tensor& dst = call.out;
  const Tensor& src = call.input(1);
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda() && src.device().is_cuda()) {
    copy_on_device(dst, src);
  } else if (dst.device().is_cuda()) {
    copy_host_to_device(dst, src);
  } else {
    copy_device_to_host(dst, src);
  }
}

}  // namespace ts
