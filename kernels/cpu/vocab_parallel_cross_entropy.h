// The vocabulary-parallel fused cross-entropy on the CPU (Megatron style). Each rank holds logits
// (N, Vl) for the global columns [vocab_start, vocab_start + Vl); of them the first `valid` are
// vocabulary, the rest padding (valid = clamp(V - vocab_start, 0, Vl)). The forward takes three
// steps with two all-reduces between them, done by the caller, so the full logits never exist:
//   1. vocab_parallel_ce_local_stats        then all-reduce MAX of row_max[N, 2N)
//   2. vocab_parallel_ce_rescale            then all-reduce SUM of stats (2N)
//   3. vocab_parallel_ce_loss
// The backward is local: (softmax - onehot) * dloss / count on this rank's columns.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// logits (N, Vl), targets (N) global ids or -1. Writes row_max (2, N): both rows this rank's
// maximum over its valid columns (-inf when it has none), the second to be max-reduced in place;
// stats (2, N): row 0 sum of exp(logit - row_max[0]) over the valid columns, row 1 the target's
// logit when this rank holds the target's column, else 0.
template <typename T>
void vocab_parallel_ce_local_stats(const T* logits, const int32_t* targets, T* row_max, T* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start);

// After the max all-reduce (row_max[1] = the global row maximum): stats row 0 *= exp(local max -
// global max), so that the sum all-reduce adds exponentials of one common reference.
template <typename T>
void vocab_parallel_ce_rescale(const T* row_max, T* stats, int64_t N);

// After the sum all-reduce: row_lse (N) = global max + log(sum); loss (1) = mean over rows whose
// target is not -1 of row_lse - target logit (0 when there is none); count (1) = that number of
// rows. T is the statistics' type (f32, or f64 for the f64 reference), so the loss is never
// rounded to the logits' type. V is the real vocabulary: a target outside [0, V) other than -1 is an nd::Error.
template <typename T>
void vocab_parallel_ce_loss(const T* row_max, const T* stats, const int32_t* targets, T* loss, T* row_lse, T* count,
                            int64_t N, int64_t V);

// dloss (1, StatType like the loss) -> dlogits (N, Vl) += (exp(logit - row_lse) - onehot(target)) * dloss / count over
// the valid columns; ignored rows and padding columns get nothing. With accumulate = false
// dlogits is overwritten instead (zeros where nothing is added). Null dlogits: nothing to do.
template <typename T>
void vocab_parallel_ce_backward(const T* logits, const int32_t* targets, const T* row_lse, const T* count,
                                const StatType<T>* dloss, T* dlogits, int64_t N, int64_t Vl, int64_t valid,
                                int64_t vocab_start, bool accumulate);

}  // namespace nd::cpu
