// The checksum every checkpoint slice carries: 64 bits over the bytes, four independent lanes of
// (h ^ word) * prime over little-endian 64-bit words, so it runs near memory speed and changing
// any one word always changes it. Not cryptographic: it catches torn, truncated and flipped data.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nd::train {

uint64_t checksum64(const void* bytes, size_t nbytes);

// A slice's checksum in current checkpoints, composed of chunks: checksum64 of each 1 MiB chunk
// (the last may be shorter), then checksum64 of those values as little-endian 64-bit words. A
// part's /manifest and an index's /checkpoint say so in the attribute kChecksumAttribute; without it
// a slice's checksum is checksum64 of its bytes.
constexpr size_t kChecksumChunkBytes = size_t{1} << 20;
constexpr const char* kChecksumAttribute = "slice_checksum";
constexpr const char* kChunkedChecksum = "checksum64 of 1 MiB chunks";
uint64_t combine_chunk_checksums(const uint64_t* chunk_sums, size_t count);
uint64_t chunked_checksum64(const void* bytes, size_t nbytes);

}  // namespace nd::train
