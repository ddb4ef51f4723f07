#include "tensor/storage.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "tensor/error.h"
#include "tensor/memory_stats.h"

namespace nd {

namespace {
constexpr size_t kHostAlignment = 64;  // one cache line, and enough for AVX-512 loads
// Buffers of a page or more start on a page: direct I/O (a checkpoint's write from the flat
// parameter buffers) needs page-aligned memory.
constexpr size_t kPageAlignment = 4096;

std::atomic<size_t> g_host_current{0};
std::atomic<size_t> g_host_peak{0};

void count_host_alloc(size_t nbytes) {
  const size_t now = g_host_current.fetch_add(nbytes) + nbytes;
  size_t peak = g_host_peak.load();
  while (now > peak && !g_host_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

HostMemoryStats host_memory_stats() { return {g_host_current.load(), g_host_peak.load()}; }
void reset_peak_host_memory() { g_host_peak.store(g_host_current.load()); }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (nbytes == 0) return;
  if (device.is_cpu()) {
    const size_t align = nbytes >= kPageAlignment ? kPageAlignment : kHostAlignment;
    size_t rounded = (nbytes + align - 1) / align * align;
    data_ = std::aligned_alloc(align, rounded);
    if (data_ == nullptr)
      ND_FAIL("out of host memory: " << static_cast<double>(nbytes) / 1e9 << " GB (" << nbytes
                                     << " bytes) did not fit");
    count_host_alloc(nbytes);
  } else {
    data_ = device_alloc(nbytes, device.index);
  }
}

Storage::~Storage() {
  if (!data_) return;
  if (device_.is_cpu()) {
    std::free(data_);
    g_host_current.fetch_sub(nbytes_);
  } else {
    device_free(data_, device_.index);
  }
}

}  // namespace nd
