// Picks the CPU kernel instantiation for a tensor's dtype: CPU kernels are templates over the
// float type (f32 for training, f64 for the gradient checks).
#pragma once
#include "tensor/dtype_dispatch.h"

// Runs `body` with `scalar_t` bound to float or double according to `dtype`.
#define ND_DISPATCH_CPU_FLOAT(dtype, what, ...) \
  ND_DISPATCH_F32_OR(dtype, ::nd::DType::F64, double, "the CPU", what, __VA_ARGS__)
