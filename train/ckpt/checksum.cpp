// checksum64: lane i hashes words i, i + 4, i + 8, ...; the tail (< 32 bytes) goes word by word
// into lane 0, the last partial word zero-padded; the lanes and the length are mixed at the end.
#include "train/ckpt/checksum.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensor/error.h"

namespace nd::train {
namespace {

constexpr uint64_t kPrime = kChecksumPrime;

inline uint64_t load_word(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

inline uint64_t mix(uint64_t h) {  // splitmix64's finaliser
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

void Checksum64::add(const void* bytes, size_t nbytes) {
  ND_CHECK(!ended_, "Checksum64: a piece of " << nbytes << " bytes after one that was not a multiple of 32");
  const auto* p = static_cast<const unsigned char*>(bytes);
  uint64_t h0 = h_[0], h1 = h_[1], h2 = h_[2], h3 = h_[3];
  size_t i = 0;
  for (; i + 32 <= nbytes; i += 32) {
    h0 = (h0 ^ load_word(p + i)) * kPrime;
    h1 = (h1 ^ load_word(p + i + 8)) * kPrime;
    h2 = (h2 ^ load_word(p + i + 16)) * kPrime;
    h3 = (h3 ^ load_word(p + i + 24)) * kPrime;
  }
  for (; i + 8 <= nbytes; i += 8) h0 = (h0 ^ load_word(p + i)) * kPrime;
  if (i < nbytes) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, nbytes - i);
    h0 = (h0 ^ w) * kPrime;
  }
  h_[0] = h0, h_[1] = h1, h_[2] = h2, h_[3] = h3;
  length_ += nbytes;
  ended_ = nbytes % 32 != 0;
}

uint64_t Checksum64::value() const { return checksum64_of_lanes(h_, length_); }

uint64_t checksum64_of_lanes(const uint64_t lanes[4], uint64_t nbytes) {
  return mix(mix(mix(mix(lanes[0] ^ nbytes) ^ lanes[1]) ^ lanes[2]) ^ lanes[3]);
}

uint64_t checksum64(const void* bytes, size_t nbytes) {
  Checksum64 sum;
  sum.add(bytes, nbytes);
  return sum.value();
}

uint64_t combine_chunk_checksums(const uint64_t* chunk_sums, size_t count) {
  return checksum64(chunk_sums, count * sizeof(uint64_t));
}

uint64_t chunked_checksum64(const void* bytes, size_t nbytes) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::vector<uint64_t> sums;
  for (size_t at = 0; at < nbytes; at += kChecksumChunkBytes)
    sums.push_back(checksum64(p + at, std::min(kChecksumChunkBytes, nbytes - at)));
  return combine_chunk_checksums(sums.data(), sums.size());
}

}  // namespace nd::train
