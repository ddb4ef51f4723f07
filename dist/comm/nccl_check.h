// NCCL member of the error-macro family (tensor/error.h, tensor/cuda_check.h). Include only
// where CUDA is on. The message carries NCCL's error string and its last-error detail.
#pragma once
#include <nccl.h>

#include <string>

#include "tensor/cuda_check.h"

#define NCCL_CHECK(call)                                                                      \
  do {                                                                                        \
    ncclResult_t nd_nccl_rc_ = (call);                                                        \
    if (nd_nccl_rc_ != ncclSuccess)                                                           \
      ::nd::throw_error(#call, __FILE__, __LINE__,                                            \
                        std::string("NCCL error: ") + ncclGetErrorString(nd_nccl_rc_) + " " + \
                            ncclGetLastError(nullptr));                                       \
  } while (0)
