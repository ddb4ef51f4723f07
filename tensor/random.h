// A seeded stream of random numbers built on Philox: each draw takes the next `n` counters, so a
// generator's state is just (seed, offset) and can be saved, restored, and reproduced on a GPU.
// A generator can be anchored to a counter in memory (a CUDA graph's step reads it on the device):
// its draws then name their counters relative to that counter, which kernels read when they run.
#pragma once
#include <cstdint>

#include "tensor/dtype.h"

namespace nd {

// The counters of one draw: element i uses Philox counter start() + i under (seed, stream).
// `offset` null: start() = first. Otherwise start() = *offset + first, read when the kernel runs
// (device memory for a GPU kernel), so a replayed CUDA graph draws from the counters of its replay.
struct PhiloxCounters {
  uint64_t seed = 0, stream = 0, first = 0;
  const uint64_t* offset = nullptr;

  ND_HOST_DEVICE uint64_t start() const { return offset ? *offset + first : first; }
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 1337, uint64_t stream = 0) : seed_(seed), stream_(stream) {}

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }

  // Reserves `n` counters and returns the first; element i of the draw uses counter first + i.
  uint64_t advance(uint64_t n) {
    uint64_t first = offset_;
    offset_ += n;
    return first;
  }

  // Reserves `n` counters for a kernel. Anchored, the counters are named relative to the anchor:
  // start() is the same number as unanchored as long as *anchor holds the anchored offset.
  PhiloxCounters reserve(uint64_t n) {
    const uint64_t first = advance(n);
    if (anchor_ == nullptr) return PhiloxCounters{seed_, stream_, first, nullptr};
    return PhiloxCounters{seed_, stream_, first - anchor_offset_, anchor_};
  }

  // From now on reserve() names counters relative to `*counter`, which must hold offset() (as of
  // this call) whenever the kernels of those draws run. Null detaches.
  void anchor(const uint64_t* counter) {
    anchor_ = counter;
    anchor_offset_ = offset_;
  }
  bool anchored() const { return anchor_ != nullptr; }

  float next_uniform();  // one uniform in [0, 1) from the next counter
  uint64_t next_u64();   // one 64-bit integer from the next counter

 private:
  uint64_t seed_;
  uint64_t stream_;
  uint64_t offset_ = 0;
  const uint64_t* anchor_ = nullptr;
  uint64_t anchor_offset_ = 0;
};

}  // namespace nd
