// Fused cross-entropy on the GPU: one read of the logits in the forward (online max and sum of
// exponentials per row), one read plus one read-modify-write of dlogits in the backward.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// logits (N, Vp) with vocabulary columns [0, V) and padding [V, Vp); targets (N) in [0, V) or -1
// (ignored). Writes loss (1) = mean over counted rows of lse(row[:V]) - row[target] (0 when no row
// counts), row_lse (N) in f32, and count (1) = number of counted rows, as f32. A target outside
// [0, V) other than -1 makes the loss NaN (checking it on the host would stall the stream).
template <typename T>
void cross_entropy_forward(const T* logits, const int32_t* targets, T* loss, float* row_lse, float* count, int64_t N,
                           int64_t Vp, int64_t V, cudaStream_t stream = nullptr);

// dloss (1) -> dlogits (N, Vp) += (softmax(row[:V]) - onehot(target)) * dloss / count; ignored
// rows and padding columns are left as they are. With accumulate = false dlogits is overwritten
// instead (padding and ignored rows get zeros), which spares zero-filling a fresh gradient buffer.
template <typename T>
void cross_entropy_backward(const T* logits, const int32_t* targets, const float* row_lse, const float* count,
                            const T* dloss, T* dlogits, int64_t N, int64_t Vp, int64_t V, bool accumulate = true,
                            cudaStream_t stream = nullptr);

}  // namespace nd::cuda
