// ops/copy/copy_cuda.cu: the CUDA rungs of copy_, whenever a GPU is involved:
// device to device, host to device, device to host. clone, contiguous,
// to(dtype) and to(device) all come here through copy_.
//
// What changed from rung 0 (copy_cpu_ref.cpp), rung by rung:
//   strided (1): on one GPU, copy_strided_kernel, one thread per destination
//     element: read the source through its strides (0 on broadcast dims),
//     convert the dtype, write through the destination's strides.
//   staged (2): across the bus when layouts or dtypes differ: the host side is
//     made contiguous in its own dtype first, the bytes cross the bus
//     unchanged, and the layout/dtype work happens on the GPU (a device
//     temporary holds them): a cudaMemcpyAsync and the strided kernel.
//   memcpy (3): dense and alike (same dtype and shape, both contiguous): one
//     cudaMemcpyAsync on the current stream (a Memcpy HtoD/DtoH/DtoD row in a trace).
// Cost:  one read and one write per element; the bus (PCIe/NVLink-C2C) is far
//        slower than HBM, so host<->device copies dominate when they happen.
// Try:   ./build/dev/ts_tests -tc='cuda: every variant*'
#include "ops/checks.h"
#include "ops/cuda_common.cuh"
#include "ops/ops.h"
#include "ops/copy/copy.h"
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
    return numeric_cast<To>(v);
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

// dst (on the GPU) = src (on the same GPU) broadcast to dst's shape, converted to dst's dtype: the kernel.
void launch_copy_strided(Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
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

// The same, by one cudaMemcpyAsync when the two are dense and alike.
void copy_on_device(Tensor& dst, const Tensor& src) {
  if (dense_and_alike(dst, src) && dst.numel() > 0) {
    TS_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.numel()) * dst.element_size(),
                                  cudaMemcpyDeviceToDevice, cuda::current_stream()));
    return;
  }
  launch_copy_strided(dst, src);
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

namespace {

// Why a copy between these devices is not for the GPU rungs at all, or nullptr.
const char* not_for_a_gpu(Device dst, Device src) {
  if (dst.is_cuda() && src.is_cuda() && dst != src) return "copies between two GPUs are not supported";
  if (dst.is_cpu() && src.is_cpu()) return "host to host copies run on the CPU";
  return nullptr;
}

bool refuse(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

}  // namespace

bool copy_cuda_strided_supports(const OpCall& call, std::string* why) {
  const Tensor &dst = call.input(0), &src = call.input(1);
  if (!dst.device().is_cuda() || dst.device() != src.device())
    return refuse(why, fmt::format("copies on one GPU only (dst on {}, src on {})", dst.device().str(), src.device().str()));
  return true;
}

bool copy_cuda_staged_supports(const OpCall& call, std::string* why) {
  const Tensor &dst = call.input(0), &src = call.input(1);
  if (const char* reason = not_for_a_gpu(dst.device(), src.device())) return refuse(why, reason);
  if (dst.device() == src.device()) return refuse(why, "copies across the bus only (both tensors are on one GPU)");
  return true;
}

bool copy_cuda_memcpy_supports(const OpCall& call, std::string* why) {
  const Tensor &dst = call.input(0), &src = call.input(1);
  if (const char* reason = not_for_a_gpu(dst.device(), src.device())) return refuse(why, reason);
  if (!dense_and_alike(dst, src))
    return refuse(why, fmt::format("needs both tensors contiguous, of one dtype and shape (dst {} {}, src {} {})",
                                   dtype_short_name(dst.dtype()), dst.shape(), dtype_short_name(src.dtype()), src.shape()));
  return true;
}

void copy_cuda_strided(const Tensor&, const Tensor& src, Tensor& dst) { launch_copy_strided(dst, src); }

namespace {
// A copy across the bus reads or writes host memory once, when it is issued: a graph would replay
// the same stale bytes (and the driver cannot capture a copy from pageable memory).
void refuse_host_copy_in_capture(const Tensor& dst, const Tensor& src) {
  cuda::check_not_capturing(dst.device().is_cpu() ? "copy_ to the CPU" : "copy_ from the CPU",
                            "a replay would not read or write the host's memory again; copy into (or out of) a "
                            "cuda tensor the graph uses, before (or after) each replay");
}
}  // namespace

void copy_cuda_staged(const Tensor&, const Tensor& src, Tensor& dst) {
  refuse_host_copy_in_capture(dst, src);
  if (dst.numel() == 0) return;
  if (dst.device().is_cuda()) {
    copy_host_to_device(dst, src);
  } else {
    copy_device_to_host(dst, src);
  }
}

void copy_cuda_memcpy(const Tensor&, const Tensor& src, Tensor& dst) {
  const size_t bytes = static_cast<size_t>(dst.numel()) * dst.element_size();
  if (bytes == 0) return;
  const cudaMemcpyKind kind = dst.device().is_cpu()   ? cudaMemcpyDeviceToHost
                              : src.device().is_cpu() ? cudaMemcpyHostToDevice
                                                      : cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDeviceToDevice) refuse_host_copy_in_capture(dst, src);
  // From pageable host memory the call returns once the bytes are staged, so the source may die right after.
  TS_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, kind, cuda::current_stream()));
  if (kind == cudaMemcpyDeviceToHost) TS_CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream()));  // the host reads these bytes next
}

}  // namespace ts
