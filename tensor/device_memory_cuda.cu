// Device memory through the CUDA runtime. (The caching allocator replaces the plain
// cudaMalloc/cudaFree here so that the steady-state training step allocates nothing.)
#include <cstring>

#include "tensor/cuda_check.h"
#include "tensor/storage.h"

namespace nd {

bool cuda_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

void* device_alloc(size_t nbytes, int device) {
  CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, nbytes));
  return p;
}

void device_free(void* ptr, int device) {
  cudaSetDevice(device);
  cudaFree(ptr);
}

void device_memset_zero(void* ptr, size_t nbytes, int device) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaMemset(ptr, 0, nbytes));
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault));
}

}  // namespace nd
