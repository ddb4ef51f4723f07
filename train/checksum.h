// The checksum every checkpoint slice carries: 64 bits over the bytes, four independent lanes of
// (h ^ word) * prime over little-endian 64-bit words, so it runs near memory speed and changing
// any one word always changes it. Not cryptographic: it catches torn, truncated and flipped data.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nd::train {

uint64_t checksum64(const void* bytes, size_t nbytes);

}  // namespace nd::train
