// Layer normalisation over the last dimension on the CPU. The forward saves each row's mean and
// reciprocal standard deviation, which is all the backward needs besides x and w.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// x (N, C), w (C), b (C) -> out (N, C), mean (N), rstd (N) = 1 / sqrt(var + eps) (biased var).
template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, StatType<T>* mean, StatType<T>* rstd, int64_t N,
                       int64_t C, float eps);

// dout (N, C), x (N, C), w (C), mean (N), rstd (N) -> dx (N, C), dw (C), db (C), each (+)=.
template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const StatType<T>* mean, const StatType<T>* rstd,
                        GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t N, int64_t C);

}  // namespace nd::cpu
