// A reference-counted block of memory on one device. Tensors and their views share one Storage.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/device.h"
#include "tensor/dtype.h"

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
// Stream-ordered on the compute stream like device_memset_zero (tensor/device_fill_cuda.cu):
// n elements of `elem_size` bytes (1, 2, 4 or 8) at ptr set to the bytes at `value`; and n elements
// converted from src_dtype to dst_dtype as the host converts them (f32, f64, bf16 and f16 only).
void device_fill(void* ptr, const void* value, size_t elem_size, int64_t n, int device);
bool device_can_convert(DType dtype);
void device_convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n, int device);

}  // namespace nd
