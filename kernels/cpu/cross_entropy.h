// CPU reference for the fused cross-entropy: log-softmax over the valid vocabulary and the
// negative log-likelihood of the targets, averaged over the rows whose target is not -1; the
// gradient either in a backward pass or written by the forward itself.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// logits (N, Vp), of which columns [0, V) are the vocabulary and [V, Vp) padding; targets (N) in
// [0, V) or -1 (row ignored). Writes loss (1, StatType: f32 for every model dtype, never rounded
// to the logits' type): the mean over non-ignored rows of
// lse(logits[row, :V]) - logits[row, target], 0 when every row is ignored; row_lse (N), the
// log-sum-exp of each row over [0, V); and count (1), the number of non-ignored rows. Backward
// reads row_lse and count. A target outside [0, V) other than -1 is an nd::Error naming it, its
// row and V.
template <typename T>
void cross_entropy_forward(const T* logits, const int32_t* targets, StatType<T>* loss, StatType<T>* row_lse,
                           StatType<T>* count, int64_t N, int64_t Vp, int64_t V);

// The number of targets that are not -1; an nd::Error names the first target outside [0, V).
int64_t count_cross_entropy_targets(const int32_t* targets, int64_t N, int64_t V);

// dloss (1, StatType like the loss), the gradient of the mean loss -> dlogits (N, Vp) (+)= (softmax(logits[row, :V]) -
// onehot(target)) * dloss / count. Ignored rows and padding columns get zero.
template <typename T>
void cross_entropy_backward(const T* logits, const int32_t* targets, const StatType<T>* row_lse,
                            const StatType<T>* count, const StatType<T>* dloss, GradDest<T> dlogits, int64_t N,
                            int64_t Vp, int64_t V);

// The forward and the logits' gradient in one pass over the logits (the cross_entropy_grad fusion):
// loss, row_lse and count as cross_entropy_forward writes them, and dlogits (N, Vp) =
// (softmax(logits[row, :V]) - onehot(target)) * dloss / count, as cross_entropy_backward writes a
// fresh buffer: zero rows for ignored targets, zero padding columns. dloss (1) is read from memory
// when the kernel runs. dlogits may be logits itself: the gradient is then written over them.
template <typename T>
void cross_entropy_forward_with_grad(const T* logits, const int32_t* targets, const StatType<T>* dloss,
                                     StatType<T>* loss, StatType<T>* row_lse, StatType<T>* count, T* dlogits,
                                     int64_t N, int64_t Vp, int64_t V);

// dlogits (n) *= dloss / announced (both (1), StatType, read from memory): the gradient that
// cross_entropy_forward_with_grad wrote for dloss = announced, turned into the one for dloss.
template <typename T>
void cross_entropy_rescale_grad(const StatType<T>* dloss, const StatType<T>* announced, T* dlogits, int64_t n);

}  // namespace nd::cpu
