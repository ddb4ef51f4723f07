// The checksum every checkpoint slice carries: 64 bits over the bytes, four independent lanes of
// (h ^ word) * prime over little-endian 64-bit words, so it runs near memory speed and changing
// any one word always changes it. Not cryptographic: it catches torn, truncated and flipped data.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nd::train {

uint64_t checksum64(const void* bytes, size_t nbytes);

// checksum64 over bytes that come in pieces (a checkpoint writer's chunks): every piece but the
// last must be a multiple of 32 bytes; value() equals checksum64 of all the pieces joined.
class Checksum64 {
 public:
  void add(const void* bytes, size_t nbytes);
  uint64_t value() const;

 private:
  uint64_t h_[4] = {0xcbf29ce484222325ull, 0xcbf29ce484222325ull ^ 1, 0xcbf29ce484222325ull ^ 2,
                    0xcbf29ce484222325ull ^ 3};
  uint64_t length_ = 0;
  bool ended_ = false;  // a piece that is not a multiple of 32 bytes came: it must be the last
};

}  // namespace nd::train
