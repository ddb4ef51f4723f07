// Token + position embedding on the GPU. The backward is deterministic (bitwise the same run to run):
// positions are sorted by token id and each token's rows are summed in a fixed order, no atomics.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// idx (B, S) i32 in [0, V) (validated by the caller); wte (V, C); wpe (>= S, C)
// -> out (B, S, C) = wte[idx[b, s]] + wpe[s].
template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C,
                       cudaStream_t stream = nullptr);

// dout (B, S, C). Adds dwte[v] += sum of dout[b, s] over positions with idx == v, and
// dwpe[s] += sum over b of dout[b, s]; a null gradient pointer skips it. V bounds the ids.
template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, T* dwte, T* dwpe, int64_t B, int64_t S, int64_t C,
                        int64_t V, cudaStream_t stream = nullptr);

// Number of ids in idx (n) outside [0, V), read back to the host (synchronises the stream).
int64_t count_invalid_token_ids(const int32_t* idx, int64_t n, int64_t V, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
