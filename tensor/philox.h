// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Element i of a draw depends only on (seed, offset + i), so the CPU
// and every CUDA kernel produce the same numbers for the same seed, in any order.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensor/dtype.h"

namespace nd {

struct Philox4 {
  uint32_t v[4];
};

ND_HOST_DEVICE inline void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Four 32-bit words from (key = seed, counter = (index, stream)).
ND_HOST_DEVICE inline Philox4 philox4x32(uint64_t seed, uint64_t index, uint64_t stream) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits, exactly representable in f32.
ND_HOST_DEVICE inline float philox_uniform(uint64_t seed, uint64_t index, uint64_t stream) {
  return static_cast<float>(philox4x32(seed, index, stream).v[0] >> 8) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller on two words of the same counter.
ND_HOST_DEVICE inline float philox_normal(uint64_t seed, uint64_t index, uint64_t stream) {
  Philox4 r = philox4x32(seed, index, stream);
  float u1 = (static_cast<float>(r.v[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]: log is finite
  float u2 = static_cast<float>(r.v[1] >> 8) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
}

}  // namespace nd
