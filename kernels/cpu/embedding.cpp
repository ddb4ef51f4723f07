// Embedding gather and its scatter-add backward. The scatter is parallel over channel ranges, so
// each output element is summed by one thread in (b, s) order: the same bits on every run.
#include "kernels/cpu/embedding.h"

#include <algorithm>

#include "tensor/error.h"

namespace nd::cpu {

template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C,
                       int64_t V) {
  // Serial on purpose: the check throws, which must not happen inside an OpenMP region.
  for (int64_t i = 0; i < B * S; ++i)
    ND_CHECK(idx[i] >= 0 && idx[i] < V,
             "embedding: token id " << idx[i] << " at position " << i << " is outside the vocabulary of size " << V);
#pragma omp parallel for schedule(static) if (B * S * C >= (1 << 16))
  for (int64_t row = 0; row < B * S; ++row) {
    const T* token = wte + static_cast<int64_t>(idx[row]) * C;
    const T* position = wpe + (row % S) * C;
    T* o = out + row * C;
    for (int64_t c = 0; c < C; ++c) o[c] = token[c] + position[c];
  }
}

template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, GradDest<T> dwte, GradDest<T> dwpe, int64_t B, int64_t S,
                        int64_t C, int64_t V, int64_t P) {
  constexpr int64_t kChunk = 32;
  bool parallel = B * S * C >= (1 << 16);
  if (dwte.ptr != nullptr) {
    // A scatter leaves the rows of absent ids alone: a first contribution clears them first.
    if (!dwte.accumulate) std::fill(dwte.ptr, dwte.ptr + V * C, T(0));
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
      int64_t c1 = std::min(C, c0 + kChunk);
      for (int64_t row = 0; row < B * S; ++row) {
        if (idx[row] < 0 || idx[row] >= V) continue;
        T* g = dwte.ptr + static_cast<int64_t>(idx[row]) * C;
        const T* d = dout + row * C;
        for (int64_t c = c0; c < c1; ++c) g[c] += d[c];
      }
    }
  }
  if (dwpe.ptr != nullptr) {
    if (!dwpe.accumulate) std::fill(dwpe.ptr + S * C, dwpe.ptr + P * C, T(0));
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t s = 0; s < S; ++s) {
      T* g = dwpe.ptr + s * C;
      if (!dwpe.accumulate) std::fill(g, g + C, T(0));
      for (int64_t b = 0; b < B; ++b) {
        const T* d = dout + (b * S + s) * C;
        for (int64_t c = 0; c < C; ++c) g[c] += d[c];
      }
    }
  }
}

#define ND_INSTANTIATE_EMBEDDING(T)                                                                               \
  template void embedding_forward<T>(const int32_t*, const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t); \
  template void embedding_backward<T>(const int32_t*, const T*, GradDest<T>, GradDest<T>, int64_t, int64_t,       \
                                      int64_t, int64_t, int64_t)
ND_CPU_INSTANTIATE(ND_INSTANTIATE_EMBEDDING);

}  // namespace nd::cpu
