// checksum64: lane i hashes words i, i + 4, i + 8, ...; the tail (< 32 bytes) goes word by word
// into lane 0, the last partial word zero-padded; the lanes and the length are mixed at the end.
#include "train/ckpt/checksum.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nd::train {
namespace {

constexpr uint64_t kSeed = 0xcbf29ce484222325ull;
constexpr uint64_t kPrime = 0x100000001b3ull;  // FNV-1a's: odd, so (h ^ w) * p is a bijection in w

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

uint64_t checksum64(const void* bytes, size_t nbytes) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  uint64_t h0 = kSeed, h1 = kSeed ^ 1, h2 = kSeed ^ 2, h3 = kSeed ^ 3;
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
  return mix(mix(mix(mix(h0 ^ static_cast<uint64_t>(nbytes)) ^ h1) ^ h2) ^ h3);
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
