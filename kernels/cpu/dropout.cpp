// Dropout forward/backward with the mask recomputed from Philox counters (tensor/philox.h).
#include "kernels/cpu/dropout.h"

#include "tensor/philox.h"

namespace nd::cpu {

namespace {
inline bool kept(uint64_t seed, uint64_t counter, uint64_t stream, float p) {
  return philox_uniform(seed, counter, stream) >= p;
}
}  // namespace

template <typename T>
void dropout_forward(const T* x, T* out, int64_t n, float p, const PhiloxCounters& rng) {
  const uint64_t seed = rng.seed, first = rng.start(), stream = rng.stream;
  const T scale = T(1) / (T(1) - static_cast<T>(p));  // unused (inf) when p == 1: nothing is kept
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
  for (int64_t i = 0; i < n; ++i) out[i] = kept(seed, first + i, stream, p) ? x[i] * scale : T(0);
}

template <typename T>
void dropout_backward(const T* dout, GradDest<T> dx, int64_t n, float p, const PhiloxCounters& rng) {
  if (dx.ptr == nullptr) return;
  const uint64_t seed = rng.seed, first = rng.start(), stream = rng.stream;
  const T scale = T(1) / (T(1) - static_cast<T>(p));
  T* d = dx.ptr;
  const bool accumulate = dx.accumulate;
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
  for (int64_t i = 0; i < n; ++i) {
    const T g = kept(seed, first + i, stream, p) ? dout[i] * scale : T(0);
    d[i] = accumulate ? d[i] + g : g;
  }
}

template void dropout_forward<float>(const float*, float*, int64_t, float, const PhiloxCounters&);
template void dropout_forward<double>(const double*, double*, int64_t, float, const PhiloxCounters&);
template void dropout_backward<float>(const float*, GradDest<float>, int64_t, float, const PhiloxCounters&);
template void dropout_backward<double>(const double*, GradDest<double>, int64_t, float, const PhiloxCounters&);

}  // namespace nd::cpu
