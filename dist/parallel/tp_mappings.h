// Tensor parallelism's communication (Megatron style): the group a layer's ranks form, the one
// helper every tensor-parallel collective goes through, and the mirrored autograd pairs
// copy_to_tp (identity forward, all-reduce of the gradient backward) and reduce_from_tp
// (all-reduce forward, identity backward), plus the vocabulary-parallel cross-entropy, whose
// forward all-reduces per-row statistics. At tp = 1 (no comm, or one rank) nothing communicates.
#pragma once
#include <cstdint>

#include "autograd/ops.h"
#include "autograd/variable.h"
#include "dist/comm/comm.h"

namespace nd::dist {

// The tensor-parallel group of this rank (the grid's, dist/parallel/parallel_grid.h, whose collectives are
// native or our ring as the user picked), and whether the token-wise regions run sequence-parallel
// (dist/parallel/sequence_parallel.h): each rank then holds 1 / tp of the tokens between the layers, a
// contiguous range of them; and whether its collectives at the layers' edges are split into chunks
// that overlap the GEMMs (overlap; off: one collective, then one GEMM).
struct TensorParallel {
  Comm* comm = nullptr;  // nullptr or a one-rank comm: tp = 1
  bool sequence_parallel = false;  // a no-op at tp = 1
  bool overlap = true;             // sequence parallelism only

  int size() const { return comm ? comm->size() : 1; }
  int rank() const { return comm ? comm->rank() : 0; }
  bool active() const { return size() > 1; }
  bool splits_tokens() const { return sequence_parallel && active(); }
};

// In place on `buffer` (on comm.device(), contiguous): the reduction over the group, ready for
// the compute stream when this returns; nothing at all on a one-rank group. Every
// tensor-parallel all-reduce goes through here.
void allreduce_for_tp(Comm& comm, Tensor& buffer, ReduceOp op);
// The same, started: the CommWork's wait() makes later compute see the result (dist/comm/comm.h).
CommWork allreduce_for_tp_async(Comm& comm, Tensor& buffer, ReduceOp op);

// x (any shape), replicated on the group's ranks -> x itself; backward all-reduces (sums) the
// gradient over the group. Put before a column-parallel layer.
Variable copy_to_tp(const Variable& x, const TensorParallel& tp);

// linear(copy_to_tp(x), w, b) with w (N / tp, K) and b (N / tp) this rank's rows: the
// column-parallel layer. Backward all-reduces the input gradient while the weight gradient is
// computed (ops::linear_reduced_dx), so the collective hides behind the product. When tp splits
// tokens, x is this rank's share (B, T / tp, K), all-gathered in chunks that overlap the GEMMs, and
// the output is (B, T, N / tp) (dist/parallel/sequence_parallel.h).
Variable column_parallel_linear(const Variable& x, const Variable& w, const Variable& b, const TensorParallel& tp);

// x, this rank's partial sum -> the sum over the group; backward passes the gradient through.
// x's buffer is reduced in place and becomes the result (no copy), so x must be an op output
// that nothing else reads, such as a row-parallel product or the vocabulary-parallel embedding.
Variable reduce_from_tp(const Variable& x, const TensorParallel& tp);

// logits (B, T, Vl), this rank's columns [rank * Vl, (rank + 1) * Vl) of the padded vocabulary;
// targets (B, T) in [0, vocab_size) or -1, the same on every rank of the group -> the scalar mean
// cross-entropy over the full vocabulary [0, vocab_size), equal on every rank: all-reduces of each
// row's max (one collective) and of its sum of exponentials and target logit (packed, one more);
// backward is local. See ops::vocab_parallel_cross_entropy.
// With `loss_gradient` (null = none) the forward also writes the logits' gradient for that seed
// (ops::LossGradient, the cross_entropy_grad fusion).
Variable vocab_parallel_cross_entropy(const Variable& logits, const Tensor& targets, int64_t vocab_size,
                                      const TensorParallel& tp, const ops::LossGradient* loss_gradient = nullptr);

}  // namespace nd::dist
