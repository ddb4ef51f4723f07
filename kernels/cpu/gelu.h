// GELU on the CPU in GPT-2's tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// x (n) -> out (n).
template <typename T>
void gelu_forward(const T* x, T* out, int64_t n);

// x (n), dout (n) -> dx (n) (+)= gelu'(x) * dout.
template <typename T>
void gelu_backward(const T* x, const T* dout, GradDest<T> dx, int64_t n);

}  // namespace nd::cpu
