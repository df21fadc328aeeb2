// tensor/storage.h: one allocation, shared by every view of it.
//
// Tensors hold a std::shared_ptr<Storage>; the bytes go back to their
// allocator when the last view is gone. A Storage never knows about shapes.
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/allocator.h"
#include "tensor/device.h"

namespace ts {

class Storage {
 public:
  // Allocates nbytes on device through allocator_for(device).
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
};

}  // namespace ts
