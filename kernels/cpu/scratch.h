// Scratch memory of the CPU kernels, taken before their OpenMP regions: an exception cannot leave
// a parallel region (a failed allocation inside one terminates the process), so every kernel asks
// here first, and a request that does not fit is one nd::Error naming the kernel and the size.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include <omp.h>

#include "tensor/error.h"

namespace nd::cpu {

// "12.3 GB" for a message.
std::string format_bytes(double bytes);

// One uninitialised slice of `per_thread` elements for each of `threads` threads; slice(t) is
// thread t's. nd::Error "out of host memory: <what> needs ..." when it cannot be had.
template <typename T>
class PerThreadScratch {
 public:
  // per_thread is a double so that a size past int64 (a T x T matrix of a huge T) is refused
  // here rather than wrapping around.
  PerThreadScratch(double per_thread, int threads, const std::string& what) : threads_(threads) {
    ND_CHECK(per_thread >= 0 && threads >= 1, what << ": scratch of " << per_thread << " elements x " << threads);
    const double bytes = per_thread * threads * sizeof(T);
    // Past this, the count would not fit a size_t (new[] would throw instead of returning null).
    if (bytes < 0x1p62) {
      per_thread_ = static_cast<int64_t>(per_thread);
      data_.reset(new (std::nothrow) T[static_cast<size_t>(per_thread_) * static_cast<size_t>(threads)]);
    }
    if (data_ == nullptr && per_thread > 0)
      ND_FAIL("out of host memory: " << what << " needs " << format_bytes(bytes) << " of scratch"
                                     << (threads == 1 ? std::string()
                                                      : " (" + format_bytes(bytes / threads) + " per thread x " +
                                                            std::to_string(threads) + " threads)"));
  }
  int threads() const { return threads_; }
  T* slice(int thread) const { return data_.get() + static_cast<int64_t>(thread) * per_thread_; }

 private:
  std::unique_ptr<T[]> data_;
  int64_t per_thread_ = 0;
  int threads_;
};

// The threads a parallel region of `items` independent items will use: no more than there are
// items, so a small batch does not reserve scratch for idle threads.
inline int region_threads(int64_t items) {
  const int64_t most = omp_get_max_threads();
  return static_cast<int>(items < 1 ? 1 : items < most ? items : most);
}

}  // namespace nd::cpu
