// Picks the CUDA kernel instantiation for a tensor's dtype: binds `scalar_t` to float or nd::bf16.
// In a build without CUDA it raises nd::Error instead (no CUDA tensor can exist there anyway).
#pragma once
#include "tensor/dtype_dispatch.h"

#if NANODIST_WITH_CUDA
#define ND_DISPATCH_CUDA_FLOAT(dtype, what, ...) \
  ND_DISPATCH_F32_OR(dtype, ::nd::DType::BF16, ::nd::bf16, "CUDA", what, __VA_ARGS__)
#else
#define ND_DISPATCH_CUDA_FLOAT(dtype, what, ...) ND_FAIL(what << ": this nanodist was built without CUDA")
#endif
