// A seeded stream of random numbers built on Philox: each draw takes the next `n` counters, so a
// generator's state is just (seed, offset) and can be saved, restored, and reproduced on a GPU.
#pragma once
#include <cstdint>

namespace nd {

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

  float next_uniform();  // one uniform in [0, 1) from the next counter
  uint64_t next_u64();   // one 64-bit integer from the next counter

 private:
  uint64_t seed_;
  uint64_t stream_;
  uint64_t offset_ = 0;
};

}  // namespace nd
