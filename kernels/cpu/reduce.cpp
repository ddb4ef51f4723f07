// CPU reduce loops: plain, vectorisable loops over contiguous arrays. bf16 and f16 values are widened to
// f32, combined, and rounded back once per call.
#include "kernels/cpu/reduce.h"

namespace nd::cpu {

namespace {

inline float widen(float v) { return v; }
inline float widen(bf16 v) { return bf16_to_f32(v); }
inline float widen(f16 v) { return f16_to_f32(v); }
inline void store(float* p, float v) { *p = v; }
inline void store(bf16* p, float v) { *p = f32_to_bf16(v); }
inline void store(f16* p, float v) { *p = f32_to_f16(v); }

template <typename T>
void reduce_add_impl(T* dst, const T* src, int64_t n, float scale) {
  if (scale == 1.0f) {
    for (int64_t i = 0; i < n; ++i) store(dst + i, widen(dst[i]) + widen(src[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) store(dst + i, (widen(dst[i]) + widen(src[i])) * scale);
  }
}

template <typename T>
void reduce_rows_impl(T* dst, const T* rows, int nrows, int64_t n, float scale, int own_row) {
  for (int64_t i = 0; i < n; ++i) {
    float acc = 0.0f;
    for (int r = 0; r < nrows; ++r) {
      float v = widen(r == own_row ? dst[i] : rows[static_cast<int64_t>(r) * n + i]);
      acc = r == 0 ? v : acc + v;
    }
    store(dst + i, scale == 1.0f ? acc : acc * scale);
  }
}

template <typename T>
void scale_impl(T* dst, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) store(dst + i, widen(dst[i]) * scale);
}

}  // namespace

void reduce_add(float* dst, const float* src, int64_t n, float scale) { reduce_add_impl(dst, src, n, scale); }
void reduce_add(bf16* dst, const bf16* src, int64_t n, float scale) { reduce_add_impl(dst, src, n, scale); }
void reduce_add(f16* dst, const f16* src, int64_t n, float scale) { reduce_add_impl(dst, src, n, scale); }

void reduce_rows(float* dst, const float* rows, int nrows, int64_t n, float scale, int own_row) {
  reduce_rows_impl(dst, rows, nrows, n, scale, own_row);
}
void reduce_rows(bf16* dst, const bf16* rows, int nrows, int64_t n, float scale, int own_row) {
  reduce_rows_impl(dst, rows, nrows, n, scale, own_row);
}
void reduce_rows(f16* dst, const f16* rows, int nrows, int64_t n, float scale, int own_row) {
  reduce_rows_impl(dst, rows, nrows, n, scale, own_row);
}

void scale_inplace(float* dst, int64_t n, float scale) { scale_impl(dst, n, scale); }
void scale_inplace(bf16* dst, int64_t n, float scale) { scale_impl(dst, n, scale); }
void scale_inplace(f16* dst, int64_t n, float scale) { scale_impl(dst, n, scale); }

}  // namespace nd::cpu
