// Normal draws into a tensor slice (kernels/cpu/random_fill.h). A draw of a GPT's weights is
// hundreds of millions of elements, each a Philox block plus a log and a cosine: the slice is cut
// into fixed chunks over the OpenMP threads, and each chunk walks its contiguous runs of counters
// in batches.
#include "kernels/cpu/random_fill.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"

namespace nd::cpu {

namespace {

// Elements per parallel chunk: large enough to amortise the run lookup, small enough to balance.
constexpr int64_t kChunk = 1 << 14;
// Counters per batch: Philox for the whole batch first (a loop the compiler vectorises), then the
// logs, then the cosines, so the libm calls of different elements overlap instead of waiting on
// each other's results. The arithmetic is philox_normal's, term for term, so the values are too.
constexpr int kBatch = 256;

inline void store(float* out, double v) { *out = static_cast<float>(v); }
inline void store(double* out, double v) { *out = v; }

void check_slice(const char* what, const ElementSlice& s, const void* out) {
  ND_CHECK(s.outer >= 1 && s.parts >= 1 && s.run >= 0 && s.offset >= 0 && s.outer_stride >= 0 && s.part_stride >= 0,
           what << ": bad slice (outer " << s.outer << ", parts " << s.parts << ", run " << s.run << ", offset "
                << s.offset << ")");
  ND_CHECK(s.size() == 0 || out != nullptr, what << ": null output");
}

// Words 0 and 1 of philox4x32(seed, first + k, stream) (tensor/philox.h) for k < kBatch: its
// rounds, lane by lane.
void philox_words(uint64_t seed, uint64_t first, uint64_t stream, uint32_t* w0, uint32_t* w1) {
  uint32_t c0[kBatch], c1[kBatch], c2[kBatch], c3[kBatch];
  for (int k = 0; k < kBatch; ++k) {
    const uint64_t index = first + static_cast<uint64_t>(k);
    c0[k] = static_cast<uint32_t>(index);
    c1[k] = static_cast<uint32_t>(index >> 32);
    c2[k] = static_cast<uint32_t>(stream);
    c3[k] = static_cast<uint32_t>(stream >> 32);
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int k = 0; k < kBatch; ++k) {
      const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0[k];
      const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2[k];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[k] ^ k0, n1 = static_cast<uint32_t>(p1);
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[k] ^ k1, n3 = static_cast<uint32_t>(p0);
      c0[k] = n0;
      c1[k] = n1;
      c2[k] = n2;
      c3[k] = n3;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int k = 0; k < kBatch; ++k) {
    w0[k] = c0[k];
    w1[k] = c1[k];
  }
}

// out[k] = mean + std * philox_normal(seed, first + k, stream) for k < count <= kBatch.
template <typename T>
void normal_batch(T* out, int64_t count, uint64_t seed, uint64_t first, uint64_t stream, double mean, double std) {
  uint32_t w0[kBatch], w1[kBatch];
  float radius[kBatch], cosine[kBatch];
  philox_words(seed, first, stream, w0, w1);
  for (int64_t k = 0; k < count; ++k) {
    const float u1 = (static_cast<float>(w0[k] >> 8) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]
    radius[k] = sqrtf(-2.0f * logf(u1));
  }
  for (int64_t k = 0; k < count; ++k) {
    const float u2 = static_cast<float>(w1[k] >> 8) * (1.0f / 16777216.0f);
    cosine[k] = cosf(6.283185307179586f * u2);
  }
  for (int64_t k = 0; k < count; ++k) store(out + k, mean + std * static_cast<double>(radius[k] * cosine[k]));
}

}  // namespace

template <typename T>
void normal_fill(T* out, const ElementSlice& slice, const PhiloxCounters& rng, double mean, double std) {
  check_slice("normal_fill", slice, out);
  const int64_t n = slice.size();
  const uint64_t seed = rng.seed, stream = rng.stream, first = rng.start();
#pragma omp parallel for schedule(static) if (n >= 2 * kChunk)
  for (int64_t chunk = 0; chunk < n; chunk += kChunk) {
    const int64_t end = std::min(n, chunk + kChunk);
    for (int64_t j = chunk; j < end;) {
      // The rest of this run (consecutive counters), or of the chunk, a batch at a time.
      const int64_t len = std::min({slice.run - j % slice.run, end - j, static_cast<int64_t>(kBatch)});
      normal_batch(out + j, len, seed, first + static_cast<uint64_t>(slice.full_index(j)), stream, mean, std);
      j += len;
    }
  }
}

template void normal_fill<float>(float*, const ElementSlice&, const PhiloxCounters&, double, double);
template void normal_fill<double>(double*, const ElementSlice&, const PhiloxCounters&, double, double);

}  // namespace nd::cpu
