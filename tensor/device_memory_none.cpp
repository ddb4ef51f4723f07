// Device memory in a build without CUDA: host copies work, anything touching a GPU is an error.
#include <cstring>

#include "tensor/error.h"
#include "tensor/storage.h"

namespace nd {

bool cuda_available() { return false; }
std::string cuda_device_name(int) { return ""; }

void* device_alloc(size_t, int) { ND_FAIL("this nanodist was built without CUDA"); }
void device_free(void*, int) {}
void device_memset_zero(void*, size_t, int) { ND_FAIL("this nanodist was built without CUDA"); }
void device_fill(void*, const void*, size_t, int64_t, int) { ND_FAIL("this nanodist was built without CUDA"); }
bool device_can_convert(DType) { return false; }
void device_convert(void*, DType, const void*, DType, int64_t, int) { ND_FAIL("this nanodist was built without CUDA"); }

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  ND_CHECK(dst_device.is_cpu() && src_device.is_cpu(), "this nanodist was built without CUDA");
  if (nbytes) std::memcpy(dst, src, nbytes);
}

}  // namespace nd

#include "tensor/memory_stats.h"

namespace nd {

DeviceMemoryStats device_memory_stats(int) { return {}; }
void reset_peak_device_memory(int) {}
void release_cached_device_memory(int) {}

}  // namespace nd
