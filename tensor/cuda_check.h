// CUDA-side members of the error-macro family (see tensor/error.h). Include only where CUDA is on.
#pragma once
#include <cuda_runtime.h>

#include "tensor/error.h"

#define CUDA_CHECK(call)                                                                     \
  do {                                                                                       \
    cudaError_t nd_err_ = (call);                                                            \
    if (nd_err_ != cudaSuccess)                                                              \
      ::nd::throw_error(#call, __FILE__, __LINE__,                                           \
                        std::string("CUDA error: ") + cudaGetErrorString(nd_err_));          \
  } while (0)

#define CUBLAS_CHECK(call)                                                                   \
  do {                                                                                       \
    int nd_st_ = static_cast<int>(call);                                                     \
    if (nd_st_ != 0)                                                                         \
      ::nd::throw_error(#call, __FILE__, __LINE__,                                           \
                        "cuBLAS error " + std::to_string(nd_st_));                           \
  } while (0)
