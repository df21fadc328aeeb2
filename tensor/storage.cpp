// tensor/storage.cpp: Storage, the CPU allocator and the allocator table.
#include "tensor/storage.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "tensor/error.h"
#include "tensor/shape.h"

namespace ts {

namespace detail {
std::atomic<MemoryObserver> memory_observer{nullptr};
}

void set_memory_observer(MemoryObserver observer) { detail::memory_observer.store(observer); }

namespace {

// 64-byte aligned host memory (a cache line; enough for any SIMD load).
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    const size_t rounded = (std::max<size_t>(nbytes, 1) + 63) / 64 * 64;
    void* ptr = std::aligned_alloc(64, rounded);
    TS_CHECK(ptr != nullptr, "cpu allocator: out of memory allocating {} bytes ({} bytes allocated)", nbytes,
             allocated_.load());
    const int64_t now = allocated_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    return ptr;
  }
  void deallocate(void* ptr, size_t nbytes, Device) override {
    std::free(ptr);
    allocated_.fetch_sub(static_cast<int64_t>(nbytes));
  }
  AllocatorStats stats(Device) const override {
    const int64_t a = allocated_.load();
    return {a, a, peak_.load(), num_allocs_.load()};
  }

 private:
  std::atomic<int64_t> allocated_{0}, peak_{0}, num_allocs_{0};
};

CpuAllocator cpu_allocator;
Allocator* allocators[kDeviceTypes] = {&cpu_allocator, nullptr};

}  // namespace

Allocator& allocator_for(Device device) {
  Allocator* a = allocators[static_cast<int>(device.type)];
  TS_CHECK(a != nullptr,
           "{}: no CUDA allocator: this build has no CUDA backend initialised (hint: check "
           "ts::cuda::is_available() before asking for a cuda tensor)",
           device.str());
  return *a;
}

void set_allocator(DeviceType type, Allocator* allocator) { allocators[static_cast<int>(type)] = allocator; }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  // Allocators round sizes up and count bytes in int64: keep both exact.
  TS_CHECK(nbytes <= static_cast<size_t>(kMaxTensorBytes), "Storage: {} bytes asked for on {}: more than {}", nbytes,
           device.str(), kMaxTensorBytes);
  allocator_ = &allocator_for(device);
  data_ = allocator_->allocate(nbytes, device);
  report_memory_event(data_, static_cast<int64_t>(nbytes), device, *allocator_);
}

Storage::~Storage() {
  allocator_->deallocate(data_, nbytes_, device_);
  report_memory_event(data_, -static_cast<int64_t>(nbytes_), device_, *allocator_);
}

}  // namespace ts
