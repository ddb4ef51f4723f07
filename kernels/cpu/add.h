// Elementwise addition on the CPU: the residual connection, and gradient accumulation.
#pragma once
#include <cstdint>

namespace nd::cpu {

// a (n), b (n) -> out (n) = a + b.
template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n);

// dst (n) += src (n).
template <typename T>
void add_inplace(T* dst, const T* src, int64_t n);

}  // namespace nd::cpu
