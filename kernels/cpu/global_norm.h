// CPU pieces of gradient clipping by global norm: a sum of squares per tensor (the caller adds
// them over all parameters and takes the square root) and an in-place rescale.
#pragma once
#include <cstdint>

namespace nd::cpu {

// x (n) -> sum of x[i]^2, accumulated in double whatever T is.
template <typename T>
double sum_of_squares(const T* x, int64_t n);

// x (n) *= s
template <typename T>
void scale_inplace(T* x, int64_t n, T s);

}  // namespace nd::cpu
