// A block of 64 floats of each array a time, still in L1 for the update: eight floats (32 bytes, one
// word per checksum lane) at a time, their old words go into the twelve independent lanes of three
// checksums (integer multiplies); then the block is updated by the vectorised AdamW.
#include "train/ckpt/checksummed_adamw.h"

#include <algorithm>
#include <cstring>

#include "train/ckpt/checksum.h"

namespace nd::train {

constexpr int64_t kBlock = 64;  // a multiple of 8

void adamw_update_checksummed(float* param, const float* grad, float* m, float* v, int64_t n,
                              const cpu::AdamWScalars<float>& s, uint64_t sums[3]) {
  ND_CHECK(n >= 0 && n % 8 == 0, "adamw_update_checksummed: " << n << " elements, not a multiple of 8");
  uint64_t lanes[3][4];
  for (auto& l : lanes)
    for (uint64_t i = 0; i < 4; ++i) l[i] = kChecksumSeed ^ i;
  for (int64_t block = 0; block < n; block += kBlock) {
    const int64_t end = std::min(n, block + kBlock);
    for (int64_t i = block; i < end; i += 8) {
      uint64_t words[3][4];
      std::memcpy(words[0], param + i, 32);
      std::memcpy(words[1], m + i, 32);
      std::memcpy(words[2], v + i, 32);
      for (int a = 0; a < 3; ++a)
        for (int l = 0; l < 4; ++l) lanes[a][l] = (lanes[a][l] ^ words[a][l]) * kChecksumPrime;
    }
    cpu::adamw_update_span(s, param + block, grad + block, m + block, v + block, end - block);
  }
  for (int a = 0; a < 3; ++a) sums[a] = checksum64_of_lanes(lanes[a], static_cast<uint64_t>(n) * sizeof(float));
}

}  // namespace nd::train
