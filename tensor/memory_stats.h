// What the device caching allocator holds: bytes handed out now and at most, bytes reserved from
// the CUDA runtime, and how often it called cudaMalloc/cudaFree (zero per step in the steady state).
#pragma once
#include <cstddef>
#include <cstdint>

namespace nd {

struct DeviceMemoryStats {
  size_t current_bytes = 0;   // in live allocations (rounded to their bucket sizes)
  size_t peak_bytes = 0;      // the most current_bytes has been since the last reset
  size_t reserved_bytes = 0;  // obtained from cudaMalloc and not yet returned
  int64_t cuda_mallocs = 0;   // cudaMalloc calls so far
  int64_t cuda_frees = 0;     // cudaFree calls so far
};

// Zeros for a device that never allocated, and always in a build without CUDA.
DeviceMemoryStats device_memory_stats(int device);
void reset_peak_device_memory(int device);
// Returns every cached (unused) block of `device` to the CUDA runtime.
void release_cached_device_memory(int device);

}  // namespace nd
