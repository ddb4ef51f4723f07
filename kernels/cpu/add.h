// Elementwise addition on the CPU: the residual connection and its backward.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// a (n), b (n) -> out (n) = a + b.
template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n);

// dout (n) -> da (n), db (n): each wanted gradient gets dout (written in the order da, db, so
// da and db may be the same buffer when a + a was taken).
template <typename T>
void add_backward(const T* dout, GradDest<T> da, GradDest<T> db, int64_t n);

}  // namespace nd::cpu
