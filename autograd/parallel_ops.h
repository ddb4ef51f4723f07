// Differentiable ops for the tensor-parallel layers (Megatron style). None communicates: the
// all-reduces around them belong to dist/ (dist/parallel/tp_mappings.h), which passes them in where an op
// needs one in its middle (the vocabulary-parallel cross-entropy, the column-parallel linear's
// input gradient). Implementations: autograd/ops/add_bias.cpp, linear_reduced_dx.cpp,
// vocab_parallel_embedding.cpp, vocab_parallel_cross_entropy.cpp.
#pragma once
#include <cstdint>
#include <functional>

#include "autograd/variable.h"

namespace nd::ops {

struct LossGradient;  // autograd/ops.h

// x (..., N) + b (N) on every row: the bias of a row-parallel linear layer, added once after the
// all-reduce of the ranks' partial products.
Variable add_bias(const Variable& x, const Variable& b);

// x itself (no copy, no pass over it); backward passes the gradient through to x and sums it over
// rows into b (N), as add_bias would. The row-parallel bias on the ranks whose partial product did
// not take it (rank 0's linear adds it), so that every rank gets its gradient.
Variable with_bias_gradient(const Variable& x, const Variable& b);

// x (B, T, C) + wpe[t] for t < T, wpe (Tmax, C) with T <= Tmax: the position embedding, added
// after the all-reduce of the vocabulary-parallel token embedding.
Variable add_positions(const Variable& x, const Variable& wpe);

// idx (B, T) i32 global token ids in [0, vocab_rows); wte (Vl, C) holds rows [vocab_start,
// vocab_start + Vl) of the token embedding -> (B, T, C): the row of each id this rank holds, zeros
// for the others. An id outside [0, vocab_rows) is an nd::Error (unchecked inside a
// TrustedTokenIdsGuard, like ops::embedding).
Variable vocab_parallel_embedding(const Tensor& idx, const Variable& wte, int64_t vocab_start, int64_t vocab_rows);

// An in-place reduction of a per-row statistics buffer over the ranks of a tensor-parallel group.
using RowStatsReduce = std::function<void(Tensor& buffer)>;

// logits (B, T, Vl): columns [vocab_start, vocab_start + Vl) of the padded vocabulary; targets
// (B, T) i32 global ids in [0, vocab_size) or -1 (ignored), the same on every rank. -> scalar mean
// over the targets that are not -1 of -log softmax(full logits[:vocab_size])[target] (f32 for f32,
// bf16 and f16 logits: ops::loss_dtype), the same on every rank, without gathering the logits:
// max_over_ranks reduces an (N) buffer by maximum, sum_over_ranks a (2, N) one by sum. Backward is local. Padding columns (global id >= vocab_size)
// take no probability and get zero gradient. On the CPU a target outside [0, vocab_size) other
// than -1 is an nd::Error (raised before any reduction); on the GPU it makes the loss NaN.
Variable vocab_parallel_cross_entropy(const Variable& logits, const Tensor& targets, int64_t vocab_start,
                                      int64_t vocab_size, const RowStatsReduce& max_over_ranks,
                                      const RowStatsReduce& sum_over_ranks);
// The same with the loss-gradient fusion (ops::LossGradient, autograd/ops.h): the forward
// also writes the logits' gradient for the announced seed (over the logits on the GPU when
// gradient.overwrite_logits; the CPU kernel needs its own buffer), and the backward hands it over
// when seeded with that very tensor, or recomputes it for any other seed.
Variable vocab_parallel_cross_entropy(const Variable& logits, const Tensor& targets, int64_t vocab_start,
                                      int64_t vocab_size, const RowStatsReduce& max_over_ranks,
                                      const RowStatsReduce& sum_over_ranks, const LossGradient& gradient);

// Starts an in-place reduction (a sum) of `buffer` over a group and returns the function that
// orders later compute after it (on the GPU: without blocking the host).
using StartReduce = std::function<std::function<void()>(Tensor& buffer)>;

// ops::linear (x (..., K), w (N, K), b (N) or undefined) whose input gradient is summed over a
// group: backward computes dx into its own buffer, starts its reduction, computes dw and db while
// the reduction runs, then waits and passes the sum to x. With copy_to_tp before a linear this is
// the column-parallel layer, its all-reduce hidden behind the weight-gradient product.
Variable linear_reduced_dx(const Variable& x, const Variable& w, const Variable& b, const StartReduce& start_reduce);

// The gradient buffer of `v` for kernels that add into it: zero-filled first when this is the
// first contribution since zero_grad (the buffer then holds no gradient yet).
Tensor accumulating_grad(Variable& v);

// Adds dout into in's gradient: a non-leaf without a gradient yet takes dout's buffer itself (no
// copy; dout is the consumer's gradient, dropped after its node ran); otherwise dout is added.
void pass_gradient(const Tensor& dout, Variable& in);

}  // namespace nd::ops
