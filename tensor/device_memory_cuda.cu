// Device memory through a caching allocator: freed blocks go to a per-device free list keyed by
// bucket size and are handed out again, so after the first training step no cudaMalloc/cudaFree
// happens (a CUDA graph can capture the step). Blocks are reused in the order of the compute
// stream: a block freed while a kernel on that stream still reads it is only reused by later
// work on the same stream. Work on another stream that outlives a tensor must hold the tensor.
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#include "tensor/memory_stats.h"
#include "tensor/storage.h"

namespace nd {

bool cuda_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

namespace {

// Sizes round up to 512 bytes, then to one of four steps per power of two (1, 1.25, 1.5, 1.75 x 2^k):
// at most 25% waste, and a static-shape training step meets the same buckets every time.
size_t bucket_size(size_t nbytes) {
  constexpr size_t kMin = 512;
  if (nbytes <= kMin) return kMin;
  size_t power = kMin;
  while (power * 2 < nbytes) power *= 2;  // power < nbytes <= 2 * power
  size_t step = power / 4;
  return (nbytes + step - 1) / step * step;
}

struct DevicePool {
  std::map<size_t, std::vector<void*>> free_blocks;  // bucket size -> cached blocks
  std::unordered_map<void*, size_t> live;            // block -> bucket size
  DeviceMemoryStats stats;
};

class CachingAllocator {
 public:
  void* allocate(size_t nbytes, int device) {
    size_t size = bucket_size(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    void* ptr = nullptr;
    auto it = pool.free_blocks.find(size);
    if (it != pool.free_blocks.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
    } else {
      ptr = cuda_malloc(pool, size, device);
    }
    pool.live[ptr] = size;
    pool.stats.current_bytes += size;
    if (pool.stats.current_bytes > pool.stats.peak_bytes) pool.stats.peak_bytes = pool.stats.current_bytes;
    return ptr;
  }

  void release(void* ptr, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    auto it = pool.live.find(ptr);
    if (it == pool.live.end()) return;  // not ours: nothing to do (never throw from a destructor)
    pool.stats.current_bytes -= it->second;
    pool.free_blocks[it->second].push_back(ptr);
    pool.live.erase(it);
  }

  DeviceMemoryStats stats(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    return pool_of(device).stats;
  }

  void reset_peak(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    pool.stats.peak_bytes = pool.stats.current_bytes;
  }

  void release_cached(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_cached(pool_of(device), device);
  }

 private:
  DevicePool& pool_of(int device) {
    ND_CHECK(device >= 0, "bad CUDA device index " << device);
    if (static_cast<size_t>(device) >= pools_.size()) pools_.resize(device + 1);
    return pools_[device];
  }

  void* cuda_malloc(DevicePool& pool, size_t size, int device) {
    CUDA_CHECK(cudaSetDevice(device));
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, size) != cudaSuccess) {
      // Out of memory with blocks cached: give them back and try once more.
      cudaGetLastError();
      free_cached(pool, device);
      cudaError_t err = cudaMalloc(&ptr, size);
      ND_CHECK(err == cudaSuccess, "out of GPU memory on cuda:" << device << " allocating " << size
                                       << " bytes (" << pool.stats.current_bytes << " bytes in use): "
                                       << cudaGetErrorString(err));
    }
    pool.stats.reserved_bytes += size;
    ++pool.stats.cuda_mallocs;
    return ptr;
  }

  void free_cached(DevicePool& pool, int device) {
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaDeviceSynchronize());  // cached blocks may still be read by queued kernels
    for (auto& [size, blocks] : pool.free_blocks) {
      for (void* p : blocks) {
        CUDA_CHECK(cudaFree(p));
        pool.stats.reserved_bytes -= size;
        ++pool.stats.cuda_frees;
      }
      blocks.clear();
    }
  }

  std::mutex mutex_;
  std::vector<DevicePool> pools_;
};

// Never destroyed: tensors released during static destruction still find it.
CachingAllocator& allocator() {
  static CachingAllocator* instance = new CachingAllocator();
  return *instance;
}

}  // namespace

void* device_alloc(size_t nbytes, int device) { return allocator().allocate(nbytes, device); }

void device_free(void* ptr, int device) { allocator().release(ptr, device); }

DeviceMemoryStats device_memory_stats(int device) { return allocator().stats(device); }
void reset_peak_device_memory(int device) { allocator().reset_peak(device); }
void release_cached_device_memory(int device) { allocator().release_cached(device); }

// Stream-ordered on the compute stream: no host synchronisation, and graph capture can record it.
void device_memset_zero(void* ptr, size_t nbytes, int device) {
  CUDA_CHECK(cudaMemsetAsync(ptr, 0, nbytes, compute_stream(device)));
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  // Ordered after all queued work of both devices, and finished when this returns.
  int device = dst_device.is_cuda() ? dst_device.index : src_device.index;
  if (src_device.is_cuda()) synchronize_device_streams(src_device.index);
  if (dst_device.is_cuda()) synchronize_device_streams(dst_device.index);
  cudaStream_t stream = compute_stream(device);
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace nd
