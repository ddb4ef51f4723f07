// Device memory through a caching allocator: freed blocks go to a per-device free list keyed by
// bucket size and are handed out again, so after the first training step no cudaMalloc/cudaFree
// happens (a CUDA graph can capture the step). Blocks are reused in the order of the compute
// stream: a block freed while a kernel on that stream still reads it is only reused by later
// work on the same stream. Work on another stream that outlives a tensor must hold the tensor.
// CUDA graph pools: while a step is captured, the blocks it allocates keep their addresses for
// every replay, so they are owned by the graph's pool and never handed to other work until the
// pool is released.
#include <algorithm>
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

std::string cuda_device_name(int device) {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "";
  return prop.name;
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

using FreeLists = std::map<size_t, std::vector<void*>>;  // bucket size -> cached blocks

struct DevicePool {
  FreeLists free_blocks;
  struct Block {
    size_t bucket, requested;
  };
  std::unordered_map<void*, Block> live;
  DeviceMemoryStats stats;
  int capturing = 0;                               // graph pool taking allocations now; 0 = none
  int next_graph_pool = 1;
  std::unordered_map<void*, int> graph_owner;      // block -> graph pool that owns it
  std::map<int, FreeLists> graph_free;             // freed blocks of each graph pool
};

void* take(FreeLists& lists, size_t size) {
  auto it = lists.find(size);
  if (it == lists.end() || it->second.empty()) return nullptr;
  void* ptr = it->second.back();
  it->second.pop_back();
  return ptr;
}

class CachingAllocator {
 public:
  void* allocate(size_t nbytes, int device) {
    size_t size = bucket_size(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    void* ptr = nullptr;
    // During capture a block freed earlier in the same capture comes first: the graph orders
    // its last reader before its next writer (same stream), as eager execution did.
    if (pool.capturing) ptr = take(pool.graph_free[pool.capturing], size);
    if (!ptr) ptr = take(pool.free_blocks, size);
    if (!ptr) ptr = cuda_malloc(pool, size, device);
    if (pool.capturing) pool.graph_owner[ptr] = pool.capturing;
    pool.live[ptr] = {size, nbytes};
    DeviceMemoryStats& s = pool.stats;
    s.current_bytes += size;
    s.current_requested_bytes += nbytes;
    s.peak_bytes = std::max(s.peak_bytes, s.current_bytes);
    s.peak_requested_bytes = std::max(s.peak_requested_bytes, s.current_requested_bytes);
    return ptr;
  }

  void release(void* ptr, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    auto it = pool.live.find(ptr);
    if (it == pool.live.end()) return;  // not ours: nothing to do (never throw from a destructor)
    const size_t size = it->second.bucket;
    pool.stats.current_bytes -= size;
    pool.stats.current_requested_bytes -= it->second.requested;
    auto owner = pool.graph_owner.find(ptr);
    if (owner != pool.graph_owner.end()) {
      pool.graph_free[owner->second][size].push_back(ptr);
    } else {
      pool.free_blocks[size].push_back(ptr);
    }
    pool.live.erase(it);
  }

  int begin_graph_pool(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    ND_CHECK(pool.capturing == 0, "cuda:" << device << " is already capturing into graph pool " << pool.capturing);
    pool.capturing = pool.next_graph_pool++;
    return pool.capturing;
  }

  void end_graph_pool(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_of(device).capturing = 0;
  }

  // The graph that used `id` is gone: its free blocks join the general cache, and its live ones
  // will when they are freed.
  void release_graph_pool(int device, int id) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaDeviceSynchronize());  // a replay may still use the blocks
    for (auto& [size, blocks] : pool.graph_free[id])
      for (void* p : blocks) pool.free_blocks[size].push_back(p);
    pool.graph_free.erase(id);
    for (auto it = pool.graph_owner.begin(); it != pool.graph_owner.end();)
      it = it->second == id ? pool.graph_owner.erase(it) : std::next(it);
  }

  DeviceMemoryStats stats(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    return pool_of(device).stats;
  }

  void reset_peak(int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    DevicePool& pool = pool_of(device);
    pool.stats.peak_bytes = pool.stats.current_bytes;
    pool.stats.peak_requested_bytes = pool.stats.current_requested_bytes;
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
int begin_graph_pool(int device) { return allocator().begin_graph_pool(device); }
void end_graph_pool(int device) { allocator().end_graph_pool(device); }
void release_graph_pool(int device, int pool) { allocator().release_graph_pool(device, pool); }

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
  int device = dst_device.is_cuda() ? dst_device.index : src_device.index;
  if (compute_stream_capturing(device)) {
    // Inside CUDA graph capture (clones of the step): stream-ordered on the compute stream, no
    // host wait. A copy from or to the host would need one, so it is an error there.
    ND_CHECK(src_device.is_cuda() && dst_device.is_cuda() && src_device.index == dst_device.index,
             "copy from " << src_device.str() << " to " << dst_device.str() << " inside CUDA graph capture");
    CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, compute_stream(device)));
    return;
  }
  // Ordered after all queued work of both devices, and finished when this returns.
  if (src_device.is_cuda()) synchronize_device_streams(src_device.index);
  if (dst_device.is_cuda()) synchronize_device_streams(dst_device.index);
  cudaStream_t stream = compute_stream(device);
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace nd
