// The token embedding of a vocabulary-parallel model on the GPU (see
// kernels/cpu/vocab_parallel_embedding.h, the reference). The backward is deterministic: positions
// are sorted by local row, ids of other ranks sorted last and skipped, each row summed in order.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// As cpu::vocab_parallel_embedding_forward.
template <typename T>
void vocab_parallel_embedding_forward(const int32_t* idx, const T* wte, T* out, int64_t n, int64_t C,
                                      int64_t vocab_start, int64_t Vl, cudaStream_t stream = nullptr);

// As cpu::vocab_parallel_embedding_backward.
template <typename T>
void vocab_parallel_embedding_backward(const int32_t* idx, const T* dout, T* dwte, int64_t n, int64_t C,
                                       int64_t vocab_start, int64_t Vl, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
