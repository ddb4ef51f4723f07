// Fused cross-entropy on the GPU: one read of the logits in the forward (online max and sum of
// exponentials per row), one read plus one write (or read-modify-write) of dlogits in the backward;
// or the forward with the gradient: one read of the logits and one write of dlogits in all.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// logits (N, Vp) with vocabulary columns [0, V) and padding [V, Vp); targets (N) in [0, V) or -1
// (ignored). Writes loss (1) = mean over counted rows of lse(row[:V]) - row[target] (0 when no row
// counts), row_lse (N) and count (1) = number of counted rows, all three f32 whatever T (the loss
// is the kernel's f32 mean, never rounded to bf16 or f16). A target outside [0, V)
// other than -1 makes the loss NaN and is recorded for check_token_errors
// (kernels/cuda/token_errors.h): checking it here would stall the stream.
template <typename T>
void cross_entropy_forward(const T* logits, const int32_t* targets, StatType<T>* loss, StatType<T>* row_lse,
                           StatType<T>* count, int64_t N, int64_t Vp, int64_t V, cudaStream_t stream = nullptr);

// As cpu::cross_entropy_backward; dloss f32 like the loss.
template <typename T>
void cross_entropy_backward(const T* logits, const int32_t* targets, const StatType<T>* row_lse,
                            const StatType<T>* count, const StatType<T>* dloss, GradDest<T> dlogits, int64_t N,
                            int64_t Vp, int64_t V, cudaStream_t stream = nullptr);

// As cpu::cross_entropy_forward_with_grad, in one kernel. dloss (1) is read from device memory
// when the kernel runs (no host sync; a CUDA graph replay reads its current value).
template <typename T>
void cross_entropy_forward_with_grad(const T* logits, const int32_t* targets, const StatType<T>* dloss,
                                     StatType<T>* loss, StatType<T>* row_lse, StatType<T>* count, T* dlogits,
                                     int64_t N, int64_t Vp, int64_t V, cudaStream_t stream = nullptr);

// As cpu::cross_entropy_rescale_grad; dloss and announced f32, on the device.
template <typename T>
void cross_entropy_rescale_grad(const StatType<T>* dloss, const StatType<T>* announced, T* dlogits, int64_t n,
                                cudaStream_t stream = nullptr);

}  // namespace nd::cuda
