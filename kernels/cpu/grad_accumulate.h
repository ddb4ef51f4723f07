// Gradient accumulation into a wider buffer (the f32 main gradients beside bf16 ones): the
// reference for kernels/cuda/grad_accumulate.h.
#pragma once
#include <cstdint>

namespace nd::cpu {

// src (n), dst (n) f32: dst = src (overwrite) or dst += src, src converted to f32 exactly.
template <typename T>
void grad_accumulate(const T* src, float* dst, int64_t n, bool overwrite);

}  // namespace nd::cpu
