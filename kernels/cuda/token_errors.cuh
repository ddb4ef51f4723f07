// The device side of kernels/cuda/token_errors.h: how a kernel records a bad token id.
#pragma once
#include "kernels/cuda/token_errors.h"

namespace nd::cuda {

// Keeps the first bad id of all threads: the one that claims the record fills it in.
__device__ __forceinline__ void record_token_error(TokenError* record, int op, int32_t id, int64_t index,
                                                   int64_t vocab) {
  if (atomicCAS(&record->op, kNoTokenError, op) == kNoTokenError) {
    record->id = id;
    record->index = index;
    record->vocab = vocab;
  }
}

}  // namespace nd::cuda
