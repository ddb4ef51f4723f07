// Binds `scalar_t` to the C++ type of a floating-point tensor's dtype so one kernel call serves
// every dtype a backend supports: f32 everywhere, plus others per backend (f64 for the CPU
// reference, bf16 and f16 on CUDA). Any other dtype is an nd::Error naming `what` and the backend.
#pragma once
#include "tensor/dtype.h"
#include "tensor/error.h"

// One case of the switches below: `scalar_t` is `Type` while the body runs.
#define ND_DTYPE_CASE(dtype_value, Type, ...) \
  case dtype_value: {                         \
    using scalar_t = Type;                    \
    __VA_ARGS__;                              \
    break;                                    \
  }

#define ND_DTYPE_UNSUPPORTED(dtype, backend, what) \
  ND_FAIL(what << ": dtype " << ::nd::dtype_name(dtype) << " is not supported on " backend)

#define ND_DISPATCH_F32_OR(dtype, other_dtype, OtherType, backend, what, ...) \
  do {                                                                        \
    switch (dtype) {                                                          \
      ND_DTYPE_CASE(::nd::DType::F32, float, __VA_ARGS__)                     \
      ND_DTYPE_CASE(other_dtype, OtherType, __VA_ARGS__)                      \
      default:                                                                \
        ND_DTYPE_UNSUPPORTED(dtype, backend, what);                           \
    }                                                                         \
  } while (0)

// The same with two more dtypes beside f32.
#define ND_DISPATCH_F32_OR2(dtype, dtype_a, TypeA, dtype_b, TypeB, backend, what, ...) \
  do {                                                                                 \
    switch (dtype) {                                                                   \
      ND_DTYPE_CASE(::nd::DType::F32, float, __VA_ARGS__)                              \
      ND_DTYPE_CASE(dtype_a, TypeA, __VA_ARGS__)                                       \
      ND_DTYPE_CASE(dtype_b, TypeB, __VA_ARGS__)                                       \
      default:                                                                         \
        ND_DTYPE_UNSUPPORTED(dtype, backend, what);                                    \
    }                                                                                  \
  } while (0)
