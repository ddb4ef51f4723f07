// Layer normalisation over the last dimension on the CPU. The forward saves each row's mean and
// reciprocal standard deviation, which is all the backward needs besides x and w.
#pragma once
#include <cstdint>

namespace nd::cpu {

// x (N, C), w (C), b (C) -> out (N, C), mean (N), rstd (N) = 1 / sqrt(var + eps) (biased var).
template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, T* mean, T* rstd, int64_t N, int64_t C, T eps);

// dout (N, C), x (N, C), w (C), mean (N), rstd (N). Adds dx (N, C), dw (C), db (C); a null
// gradient pointer skips that gradient.
template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw, T* db,
                        int64_t N, int64_t C);

}  // namespace nd::cpu
