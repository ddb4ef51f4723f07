// Vocabulary-parallel embedding gather and scatter-add. The scatter is parallel over channel
// ranges, so each output element is summed by one thread in position order: the same bits on
// every run.
#include "kernels/cpu/vocab_parallel_embedding.h"

#include <algorithm>

#include "tensor/error.h"

namespace nd::cpu {

namespace {

void check_dims(const char* what, int64_t n, int64_t C, int64_t vocab_start, int64_t Vl) {
  ND_CHECK(n >= 0 && C > 0 && vocab_start >= 0 && Vl > 0,
           what << ": bad shape n=" << n << " C=" << C << " vocab_start=" << vocab_start << " Vl=" << Vl);
}

}  // namespace

template <typename T>
void vocab_parallel_embedding_forward(const int32_t* idx, const T* wte, T* out, int64_t n, int64_t C,
                                      int64_t vocab_start, int64_t Vl) {
  check_dims("vocab_parallel_embedding_forward", n, C, vocab_start, Vl);
#pragma omp parallel for schedule(static) if (n * C >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = static_cast<int64_t>(idx[i]) - vocab_start;
    T* o = out + i * C;
    if (row < 0 || row >= Vl) {
      std::fill(o, o + C, T(0));
      continue;
    }
    const T* w = wte + row * C;
    std::copy(w, w + C, o);
  }
}

template <typename T>
void vocab_parallel_embedding_backward(const int32_t* idx, const T* dout, T* dwte, int64_t n, int64_t C,
                                       int64_t vocab_start, int64_t Vl) {
  check_dims("vocab_parallel_embedding_backward", n, C, vocab_start, Vl);
  if (dwte == nullptr) return;
  constexpr int64_t kChunk = 32;
#pragma omp parallel for schedule(static) if (n * C >= (1 << 16))
  for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
    const int64_t c1 = std::min(C, c0 + kChunk);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = static_cast<int64_t>(idx[i]) - vocab_start;
      if (row < 0 || row >= Vl) continue;
      T* g = dwte + row * C;
      const T* d = dout + i * C;
      for (int64_t c = c0; c < c1; ++c) g[c] += d[c];
    }
  }
}

template void vocab_parallel_embedding_forward<float>(const int32_t*, const float*, float*, int64_t, int64_t, int64_t,
                                                      int64_t);
template void vocab_parallel_embedding_forward<double>(const int32_t*, const double*, double*, int64_t, int64_t,
                                                       int64_t, int64_t);
template void vocab_parallel_embedding_backward<float>(const int32_t*, const float*, float*, int64_t, int64_t,
                                                       int64_t, int64_t);
template void vocab_parallel_embedding_backward<double>(const int32_t*, const double*, double*, int64_t, int64_t,
                                                        int64_t, int64_t);

}  // namespace nd::cpu
