// tensor/allocator.h: where Storage gets its bytes, and who hears about it.
//
// One Allocator per device type. The CPU one is plain aligned malloc; the
// CUDA backend installs its caching allocator with set_allocator(). Every
// allocation and free is reported to the memory observer (the profiler's
// memory columns and `[memory]` trace events) when one is installed: when
// none is, the cost is one load and one branch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tensor/device.h"

namespace ts {

struct AllocatorStats {
  int64_t allocated = 0;       // bytes handed out and not yet freed
  int64_t reserved = 0;        // bytes held from the system (>= allocated with caching)
  int64_t peak_allocated = 0;  // high-water mark of `allocated`
  int64_t num_allocs = 0;      // calls into the system allocator (malloc, cudaMalloc)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns `nbytes` bytes on `device` (never nullptr for nbytes > 0); throws ts::Error on failure.
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  virtual AllocatorStats stats(Device device) const = 0;
};

// The allocator for a device type. The CUDA slot is empty until the CUDA
// backend is linked and initialised; asking for it then throws a ts::Error.
Allocator& allocator_for(Device device);
void set_allocator(DeviceType type, Allocator* allocator);

// ---- memory events ---------------------------------------------------------

struct MemoryEvent {
  const void* ptr;
  int64_t bytes;  // > 0 allocation, < 0 free
  Device device;
  int64_t total_allocated;  // after this event, on this device
  int64_t total_reserved;
};

using MemoryObserver = void (*)(const MemoryEvent&);

namespace detail {
extern std::atomic<MemoryObserver> memory_observer;
}

// Installs (or with nullptr removes) the one observer of allocation events.
void set_memory_observer(MemoryObserver observer);

inline void report_memory_event(const void* ptr, int64_t bytes, Device device, const Allocator& allocator) {
  if (MemoryObserver observer = detail::memory_observer.load(std::memory_order_relaxed)) [[unlikely]] {
    const AllocatorStats s = allocator.stats(device);
    observer(MemoryEvent{ptr, bytes, device, s.allocated, s.reserved});
  }
}

}  // namespace ts
