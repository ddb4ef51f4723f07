// Picks the kernel instantiation for a tensor's dtype. CPU kernels are templates over the float
// type (f32 for training, f64 for the gradient checks); the CUDA side has its own dispatch.
#pragma once
#include "tensor/tensor.h"

// Runs `body` with `scalar_t` bound to float or double according to `dtype`.
#define ND_DISPATCH_CPU_FLOAT(dtype, what, ...)                                                  \
  do {                                                                                           \
    switch (dtype) {                                                                             \
      case ::nd::DType::F32: {                                                                   \
        using scalar_t = float;                                                                  \
        __VA_ARGS__;                                                                             \
        break;                                                                                   \
      }                                                                                          \
      case ::nd::DType::F64: {                                                                   \
        using scalar_t = double;                                                                 \
        __VA_ARGS__;                                                                             \
        break;                                                                                   \
      }                                                                                          \
      default:                                                                                   \
        ND_FAIL(what << ": dtype " << ::nd::dtype_name(dtype) << " is not supported on the CPU"); \
    }                                                                                            \
  } while (0)
