// Binds `scalar_t` to the C++ type of a floating-point tensor's dtype so one kernel call serves
// every dtype a backend supports: f32 everywhere, plus others per backend (f64 for the CPU
// reference, bf16 and f16 on CUDA). Any other dtype is an nd::Error naming `what` and the backend.
#pragma once
#include "tensor/dtype.h"
#include "tensor/error.h"

#define ND_DISPATCH_F32_OR(dtype, other_dtype, OtherType, backend, what, ...)                   \
  do {                                                                                          \
    switch (dtype) {                                                                            \
      case ::nd::DType::F32: {                                                                  \
        using scalar_t = float;                                                                 \
        __VA_ARGS__;                                                                            \
        break;                                                                                  \
      }                                                                                         \
      case other_dtype: {                                                                       \
        using scalar_t = OtherType;                                                             \
        __VA_ARGS__;                                                                            \
        break;                                                                                  \
      }                                                                                         \
      default:                                                                                  \
        ND_FAIL(what << ": dtype " << ::nd::dtype_name(dtype) << " is not supported on " backend); \
    }                                                                                           \
  } while (0)

// The same with two more dtypes beside f32.
#define ND_DISPATCH_F32_OR2(dtype, dtype_a, TypeA, dtype_b, TypeB, backend, what, ...)             \
  do {                                                                                          \
    switch (dtype) {                                                                            \
      case ::nd::DType::F32: {                                                                  \
        using scalar_t = float;                                                                 \
        __VA_ARGS__;                                                                            \
        break;                                                                                  \
      }                                                                                         \
      case dtype_a: {                                                                           \
        using scalar_t = TypeA;                                                                 \
        __VA_ARGS__;                                                                            \
        break;                                                                                  \
      }                                                                                         \
      case dtype_b: {                                                                           \
        using scalar_t = TypeB;                                                                 \
        __VA_ARGS__;                                                                            \
        break;                                                                                  \
      }                                                                                         \
      default:                                                                                  \
        ND_FAIL(what << ": dtype " << ::nd::dtype_name(dtype) << " is not supported on " backend); \
    }                                                                                           \
  } while (0)
