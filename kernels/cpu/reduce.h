// Local reductions for the collectives: dst += src (the ring's reduce step), a sum over rows
// (the direct small-message path) and an in-place scale (average). bf16 and f16 are summed in f32.
#pragma once
#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cpu {

// dst (n) = (dst + src) * scale, elementwise. scale = 1 for a plain sum.
void reduce_add(float* dst, const float* src, int64_t n, float scale);
void reduce_add(bf16* dst, const bf16* src, int64_t n, float scale);
void reduce_add(f16* dst, const f16* src, int64_t n, float scale);

// dst (n) = scale * sum over r of row r, rows (nrows, n), summed in row order so every rank
// that sums the same rows gets bit-identical results. Row `own_row` is read from dst itself
// (its slot in rows is ignored; -1: none), which saves copying a rank's own data into rows.
void reduce_rows(float* dst, const float* rows, int nrows, int64_t n, float scale, int own_row = -1);
void reduce_rows(bf16* dst, const bf16* rows, int nrows, int64_t n, float scale, int own_row = -1);
void reduce_rows(f16* dst, const f16* rows, int nrows, int64_t n, float scale, int own_row = -1);

// dst (n) *= scale.
void scale_inplace(float* dst, int64_t n, float scale);
void scale_inplace(bf16* dst, int64_t n, float scale);
void scale_inplace(f16* dst, int64_t n, float scale);

}  // namespace nd::cpu
