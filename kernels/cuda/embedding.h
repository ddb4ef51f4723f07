// Token + position embedding on the GPU. The backward is deterministic (bitwise the same run to run):
// positions are sorted by token id and each token's rows are summed in a fixed order, no atomics.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// As cpu::embedding_forward (kernels/cpu/embedding.h, the reference), but an id outside [0, V) is
// recorded for check_token_errors (kernels/cuda/token_errors.h) without a host sync, and that
// position gets wpe[s] alone.
template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C,
                       int64_t V, cudaStream_t stream = nullptr);

// As cpu::embedding_backward.
template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, GradDest<T> dwte, GradDest<T> dwpe, int64_t B, int64_t S,
                        int64_t C, int64_t V, int64_t P, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
