// The checksum every checkpoint slice carries: 64 bits over the bytes, four independent lanes of
// (h ^ word) * prime over little-endian 64-bit words, so it runs near memory speed and changing
// any one word always changes it. Not cryptographic: it catches torn, truncated and flipped data.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nd::train {

uint64_t checksum64(const void* bytes, size_t nbytes);

// A slice's checksum in current checkpoints, composed of chunks so that different threads can take them
// at different times (the optimizer's update takes most of an asynchronous CPU save's:
// copy_on_write.h): checksum64 of each 1 MiB chunk (the last may be shorter), then checksum64 of
// those values as little-endian 64-bit words. A part's /manifest and an index's /checkpoint say
// so in the attribute kChecksumAttribute; without it a slice's checksum is checksum64 of its bytes.
constexpr size_t kChecksumChunkBytes = size_t{1} << 20;
constexpr const char* kChecksumAttribute = "slice_checksum";
constexpr const char* kChunkedChecksum = "checksum64 of 1 MiB chunks";
uint64_t combine_chunk_checksums(const uint64_t* chunk_sums, size_t count);
uint64_t chunked_checksum64(const void* bytes, size_t nbytes);

// checksum64 taken by a pass that reads the words anyway (the CPU update, checksummed_adamw.h):
// lane i starts at kChecksumSeed ^ i and takes words i, i + 4, ... as h = (h ^ word) * kChecksumPrime;
// checksum64_of_lanes then gives checksum64 of those nbytes (a multiple of 32).
constexpr uint64_t kChecksumSeed = 0xcbf29ce484222325ull;
constexpr uint64_t kChecksumPrime = 0x100000001b3ull;  // FNV-1a's: odd, so (h ^ w) * p is a bijection in w
uint64_t checksum64_of_lanes(const uint64_t lanes[4], uint64_t nbytes);

// checksum64 over bytes that come in pieces (a checkpoint writer's chunks): every piece but the
// last must be a multiple of 32 bytes; value() equals checksum64 of all the pieces joined.
class Checksum64 {
 public:
  void add(const void* bytes, size_t nbytes);
  uint64_t value() const;

 private:
  uint64_t h_[4] = {kChecksumSeed, kChecksumSeed ^ 1, kChecksumSeed ^ 2, kChecksumSeed ^ 3};
  uint64_t length_ = 0;
  bool ended_ = false;  // a piece that is not a multiple of 32 bytes came: it must be the last
};

}  // namespace nd::train
