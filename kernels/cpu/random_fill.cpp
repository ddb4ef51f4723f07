// Normal draws into a tensor slice (kernels/cpu/random_fill.h). A draw of a GPT's weights is
// hundreds of millions of elements, each a Philox block plus a log and a cosine: the slice is cut
// into fixed chunks over the OpenMP threads, and each chunk walks its contiguous runs of counters.
#include "kernels/cpu/random_fill.h"

#include <algorithm>

#include "tensor/error.h"
#include "tensor/philox.h"

namespace nd::cpu {

namespace {

// Elements per parallel chunk: large enough to amortise the run lookup, small enough to balance.
constexpr int64_t kChunk = 1 << 14;

inline void store(float* out, double v) { *out = static_cast<float>(v); }
inline void store(double* out, double v) { *out = v; }

void check_slice(const char* what, const ElementSlice& s, const void* out) {
  ND_CHECK(s.outer >= 1 && s.parts >= 1 && s.run >= 0 && s.offset >= 0 && s.outer_stride >= 0 && s.part_stride >= 0,
           what << ": bad slice (outer " << s.outer << ", parts " << s.parts << ", run " << s.run << ", offset "
                << s.offset << ")");
  ND_CHECK(s.size() == 0 || out != nullptr, what << ": null output");
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
      const int64_t in_run = j % slice.run;
      const int64_t len = std::min(slice.run - in_run, end - j);
      const uint64_t counter = first + static_cast<uint64_t>(slice.full_index(j));
      for (int64_t k = 0; k < len; ++k)
        store(out + j + k, mean + std * static_cast<double>(philox_normal(seed, counter + k, stream)));
      j += len;
    }
  }
}

template void normal_fill<float>(float*, const ElementSlice&, const PhiloxCounters&, double, double);
template void normal_fill<double>(double*, const ElementSlice&, const PhiloxCounters&, double, double);

}  // namespace nd::cpu
