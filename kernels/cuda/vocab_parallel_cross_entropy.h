// The vocabulary-parallel fused cross-entropy on the GPU (see
// kernels/cpu/vocab_parallel_cross_entropy.h, the reference, for the three forward steps and the
// all-reduces between them). The per-row statistics, row_lse, count, the loss and its seed dloss
// are f32 here whatever the logits' type; the local stats read the logits once (online max and
// sum of exponentials).
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// logits (N, Vl), targets (N) -> row_max (2, N), stats (2, N): see the CPU reference.
template <typename T>
void vocab_parallel_ce_local_stats(const T* logits, const int32_t* targets, float* row_max, float* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start, cudaStream_t stream = nullptr);

// stats row 0 *= exp(row_max[0] - row_max[1]).
void vocab_parallel_ce_rescale(const float* row_max, float* stats, int64_t N, cudaStream_t stream = nullptr);

// -> row_lse (N), loss (1) and count (1). A target outside [0, V) other than -1 makes the loss
// NaN (checking it on the host would stall the stream).
void vocab_parallel_ce_loss(const float* row_max, const float* stats, const int32_t* targets, float* loss,
                            float* row_lse, float* count, int64_t N, int64_t V, cudaStream_t stream = nullptr);

// dloss (1) -> dlogits (N, Vl) (+)= (exp(logit - row_lse) - onehot(target)) * dloss / count.
template <typename T>
void vocab_parallel_ce_backward(const T* logits, const int32_t* targets, const float* row_lse, const float* count,
                                const float* dloss, T* dlogits, int64_t N, int64_t Vl, int64_t valid,
                                int64_t vocab_start, bool accumulate, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
