// Embedding gather and its scatter-add backward. The scatter is parallel over channel ranges, so
// each output element is summed by one thread in (b, s) order: the same bits on every run.
#include "kernels/cpu/embedding.h"

#include <algorithm>

namespace nd::cpu {

template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C) {
#pragma omp parallel for schedule(static) if (B * S * C >= (1 << 16))
  for (int64_t row = 0; row < B * S; ++row) {
    const T* token = wte + static_cast<int64_t>(idx[row]) * C;
    const T* position = wpe + (row % S) * C;
    T* o = out + row * C;
    for (int64_t c = 0; c < C; ++c) o[c] = token[c] + position[c];
  }
}

template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, T* dwte, T* dwpe, int64_t B, int64_t S, int64_t C) {
  constexpr int64_t kChunk = 32;
  bool parallel = B * S * C >= (1 << 16);
  if (dwte != nullptr) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
      int64_t c1 = std::min(C, c0 + kChunk);
      for (int64_t row = 0; row < B * S; ++row) {
        T* g = dwte + static_cast<int64_t>(idx[row]) * C;
        const T* d = dout + row * C;
        for (int64_t c = c0; c < c1; ++c) g[c] += d[c];
      }
    }
  }
  if (dwpe != nullptr) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t s = 0; s < S; ++s) {
      T* g = dwpe + s * C;
      for (int64_t b = 0; b < B; ++b) {
        const T* d = dout + (b * S + s) * C;
        for (int64_t c = 0; c < C; ++c) g[c] += d[c];
      }
    }
  }
}

template void embedding_forward<float>(const int32_t*, const float*, const float*, float*, int64_t, int64_t, int64_t);
template void embedding_forward<double>(const int32_t*, const double*, const double*, double*, int64_t, int64_t,
                                        int64_t);
template void embedding_backward<float>(const int32_t*, const float*, float*, float*, int64_t, int64_t, int64_t);
template void embedding_backward<double>(const int32_t*, const double*, double*, double*, int64_t, int64_t, int64_t);

}  // namespace nd::cpu
