// Sequence parallelism (Megatron style) on top of tensor parallelism: between the tensor-parallel
// layers each rank of the group holds 1 / tp of the tokens (batch rows [rank * B / tp, (rank + 1) *
// B / tp)), so LayerNorms, dropouts, residual adds and biases run on a share instead of the whole
// batch. The mirrored autograd pair all_gather_from_sp / reduce_scatter_to_sp replaces copy_to_tp /
// reduce_from_tp at the layers' edges; the parameters of the token-wise regions then need their
// gradients summed over the group (sum_gradients_over_tp). All inactive unless tp.splits_tokens().
#pragma once
#include <vector>

#include "dist/tp_mappings.h"

namespace nd::dist {

// The collectives of the pair, through the group's own implementation (native or, from a grid
// asked for ring, dist/ring_comm.h). input (tp * n), this rank's partial sums -> output (n): the
// sum over the group of block rank().
void reduce_scatter_for_tp(Comm& comm, const Tensor& input, Tensor& output);
// input (n) -> output (tp * n): block r holds rank r's input.
void all_gather_for_tp(Comm& comm, const Tensor& input, Tensor& output);

// x (B / tp, ...), this rank's share -> (B, ...), the whole batch on every rank; backward
// reduce-scatters (sums) the gradient, so each rank gets the gradient of its share summed over the
// group (the job copy_to_tp's all-reduce does without sequence parallelism).
Variable all_gather_from_sp(const Variable& x, const TensorParallel& tp);

// x (B, ...), this rank's partial sums -> (B / tp, ...), the sum over the group of this rank's
// share; backward all-gathers the gradient. B % tp != 0 is an nd::Error.
Variable reduce_scatter_to_sp(const Variable& x, const TensorParallel& tp);

// Into a tensor-parallel region: copy_to_tp(x), or all_gather_from_sp(x) when tp splits tokens.
Variable enter_tp_region(const Variable& x, const TensorParallel& tp);
// Out of it, from this rank's partial sums: reduce_from_tp(x), or reduce_scatter_to_sp(x).
Variable leave_tp_region(const Variable& x, const TensorParallel& tp);

// ops::dropout of the whole batch restricted to this rank's share x (B / tp, ...): the same masks
// as at tp = 1, and every rank's generator advances by the whole batch's counters.
Variable token_dropout(const Variable& x, float p, Generator& gen, bool training, const TensorParallel& tp);

// Sums the gradients of `params` over the group in place, in one all-reduce of a flat buffer:
// the parameters of token-wise regions, each of whose ranks saw only its share of the tokens.
// Parameters without a gradient are skipped (the same ones on every rank).
void sum_gradients_over_tp(const std::vector<Variable>& params, const TensorParallel& tp);
// The same over gradient tensors (e.g. the f32 main gradients of the flat buffers), one dtype.
void sum_gradients_over_tp(std::vector<Tensor> grads, const TensorParallel& tp);

}  // namespace nd::dist
