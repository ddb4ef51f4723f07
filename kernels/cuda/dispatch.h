// Picks the CUDA kernel instantiation for a tensor's dtype: binds `scalar_t` to float or nd::bf16.
// In a build without CUDA it raises nd::Error instead (no CUDA tensor can exist there anyway).
#pragma once
#include "tensor/dtype.h"
#include "tensor/error.h"

#if NANODIST_WITH_CUDA
#define ND_DISPATCH_CUDA_FLOAT(dtype, what, ...)                                                  \
  do {                                                                                            \
    switch (dtype) {                                                                              \
      case ::nd::DType::F32: {                                                                    \
        using scalar_t = float;                                                                   \
        __VA_ARGS__;                                                                              \
        break;                                                                                    \
      }                                                                                           \
      case ::nd::DType::BF16: {                                                                   \
        using scalar_t = ::nd::bf16;                                                              \
        __VA_ARGS__;                                                                              \
        break;                                                                                    \
      }                                                                                           \
      default:                                                                                    \
        ND_FAIL(what << ": dtype " << ::nd::dtype_name(dtype) << " is not supported on CUDA");    \
    }                                                                                             \
  } while (0)
#else
#define ND_DISPATCH_CUDA_FLOAT(dtype, what, ...) ND_FAIL(what << ": this nanodist was built without CUDA")
#endif
