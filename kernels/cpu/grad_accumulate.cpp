// dst (n) f32 = or += src (n).
#include "kernels/cpu/grad_accumulate.h"

#include "tensor/dtype.h"

namespace nd::cpu {

namespace {
inline float as_f32(float x) { return x; }
inline float as_f32(bf16 x) { return bf16_to_f32(x); }
inline float as_f32(f16 x) { return f16_to_f32(x); }
}  // namespace

template <typename T>
void grad_accumulate(const T* src, float* dst, int64_t n, bool overwrite) {
  if (overwrite) {
    for (int64_t i = 0; i < n; ++i) dst[i] = as_f32(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] += as_f32(src[i]);
  }
}

template void grad_accumulate<float>(const float*, float*, int64_t, bool);
template void grad_accumulate<bf16>(const bf16*, float*, int64_t, bool);
template void grad_accumulate<f16>(const f16*, float*, int64_t, bool);

}  // namespace nd::cpu
