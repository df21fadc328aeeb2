// bench/bench_timing.h: how ts_bench and ts_ladder time one call.
//
// GPU: CUDA events on the current stream around one call, each call preceded by
// a 256 MiB memset. The memset empties the L2 cache (50 MiB on an H200), so
// every call reads its inputs from HBM as it would in a model, and it keeps the
// GPU busy while the CPU issues the call, so the events time the GPU's work,
// not the launch latency (as triton.testing.do_bench does).
// CPU: a steady clock around one call.
// Both: `warmup` untimed calls first (caches, allocator, first-use statics).
// A build without the CUDA toolkit has no device to time: device_times_ms then says so.
#pragma once

#if TS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "ops/ops.h"
#include "tensor/cuda_device.h"
#include "tensor/error.h"
#if TS_HAVE_CUDA
#include "tensor/cuda_check.h"
#endif

namespace ts::bench {

// The middle sample (the upper one of the two middles for an even count).
inline double median(std::vector<double> samples) {
  const auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

#if TS_HAVE_CUDA
// A CUDA event, destroyed with the object.
class CudaEvent {
 public:
  CudaEvent() { TS_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~CudaEvent() { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Device time (milliseconds) of each of `repeats` calls of fn, in call order,
// after `warmup` untimed calls; each timed call follows the L2-emptying memset.
inline std::vector<double> device_times_ms(const std::function<void()>& fn, int warmup, int repeats) {
  constexpr size_t kFlushBytes = size_t{256} << 20;
  static const Tensor* flush =  // leaked: freeing device memory during exit can outlive the CUDA runtime
      new Tensor(empty({static_cast<int64_t>(kFlushBytes)}, {DType::b8, kCUDA}));
  for (int i = 0; i < warmup; ++i) fn();
  const CudaEvent start, stop;
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    TS_CUDA_CHECK(cudaMemsetAsync(flush->data_ptr(), r & 0xff, kFlushBytes, cuda::current_stream()));
    TS_CUDA_CHECK(cudaEventRecord(start.get(), cuda::current_stream()));
    fn();
    TS_CUDA_CHECK(cudaEventRecord(stop.get(), cuda::current_stream()));
    TS_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    TS_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    samples.push_back(ms);
  }
  return samples;
}
#else
inline std::vector<double> device_times_ms(const std::function<void()>&, int, int) {
  fail("device timing: {}", cuda::unavailable_reason());
}
#endif

// The median of device_times_ms.
inline double median_device_ms(const std::function<void()>& fn, int warmup, int repeats) {
  return median(device_times_ms(fn, warmup, repeats));
}

// Host time (microseconds) of each of `repeats` calls of fn, after `warmup` untimed calls.
inline std::vector<double> host_times_us(const std::function<void()>& fn, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return samples;
}

}  // namespace ts::bench
