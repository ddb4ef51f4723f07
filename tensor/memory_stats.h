// What the device caching allocator holds: bytes handed out now and at most, bytes reserved from
// the CUDA runtime, and how often it called cudaMalloc/cudaFree (zero per step in the steady state).
// Handed-out bytes count each block at its bucket size (what it occupies); the requested figures
// count what the tensors asked for (torch.cuda.max_memory_allocated's measure, near enough: it
// rounds to 512 bytes).
#pragma once
#include <cstddef>
#include <cstdint>

namespace nd {

struct DeviceMemoryStats {
  size_t current_bytes = 0;   // in live allocations (rounded to their bucket sizes)
  size_t peak_bytes = 0;      // the most current_bytes has been since the last reset
  size_t current_requested_bytes = 0;  // the same blocks at the sizes asked for
  size_t peak_requested_bytes = 0;     // the most current_requested_bytes has been since the last reset
  size_t reserved_bytes = 0;  // obtained from cudaMalloc and not yet returned
  int64_t cuda_mallocs = 0;   // cudaMalloc calls so far
  int64_t cuda_frees = 0;     // cudaFree calls so far
};

// Zeros for a device that never allocated, and always in a build without CUDA.
DeviceMemoryStats device_memory_stats(int device);
void reset_peak_device_memory(int device);
// Returns every cached (unused) block of `device` to the CUDA runtime.
void release_cached_device_memory(int device);

// The same count for host tensors (tensor/storage.cpp): bytes of live CPU Storage blocks as asked
// for, and the most they have been since the last reset. The CPU has no caching allocator, so these
// are what the tensors hold (tests measure what autograd keeps from them).
struct HostMemoryStats {
  size_t current_bytes = 0;
  size_t peak_bytes = 0;
};
HostMemoryStats host_memory_stats();
void reset_peak_host_memory();

// CUDA graph pools. Between begin_graph_pool(device) and end_graph_pool(device) every block
// allocated on `device` joins a new pool (the returned id): its address is baked into the graph,
// so once freed it is reused only by later allocations of the same capture, never by other work.
// release_graph_pool, after the graph is destroyed, hands the pool's blocks back to the cache.
// Defined in CUDA builds only (callers sit behind NANODIST_WITH_CUDA).
int begin_graph_pool(int device);
void end_graph_pool(int device);
void release_graph_pool(int device, int pool);

}  // namespace nd
