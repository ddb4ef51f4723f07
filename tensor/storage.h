// A reference-counted block of memory on one device. Tensors and their views share one Storage.
#pragma once
#include <cstddef>
#include <memory>

#include "tensor/device.h"

namespace nd {

class Storage {
 public:
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
};

// Device-memory services that tensor/ needs from the CUDA runtime. Built from
// tensor/device_memory_cuda.cu when CUDA is on, otherwise from device_memory_none.cpp, whose
// functions raise nd::Error ("built without CUDA").
void* device_alloc(size_t nbytes, int device);
void device_free(void* ptr, int device);
// Copies between any two devices; synchronous with respect to the host.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);
void device_memset_zero(void* ptr, size_t nbytes, int device);

}  // namespace nd
