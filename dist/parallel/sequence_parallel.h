// Sequence parallelism (Megatron style) on top of tensor parallelism: between the tensor-parallel
// layers each rank of the group holds 1 / tp of the tokens, so LayerNorms, dropouts, residual adds
// and biases run on a share. The share is a contiguous range of the whole (B, T, C) flattened over
// (B, T): rank r holds tokens [r S, (r + 1) S), S = B T / tp, as a (B, T / tp, C) tensor. With one
// sequence (B = 1, what a pipeline's micro-batch may be) that is positions [r T / tp, (r + 1) T / tp),
// Megatron's split of the sequence; with more, the shares run on across sequences, so that the
// all-gathered whole is every token in order and attention needs no regrouping. At the layers'
// edges the column-parallel linear all-gathers its input (gathered_column_linear) and the
// row-parallel one reduce-scatters its partial sums (scattered_row_linear), both split into chunks
// that overlap the GEMMs; the parameters of the token-wise regions need their gradients summed
// over the group (sum_gradients_over_tp). tp must divide T. All inactive unless tp.splits_tokens().
#pragma once
#include <vector>

#include "autograd/ops/split_linear.h"
#include "dist/parallel/data_parallel.h"
#include "dist/parallel/flat_params.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/module.h"

namespace nd::dist {

// The collectives of the pair, through the group's own implementation (native or, from a grid
// asked for ring, dist/comm/ring_comm.h). input (tp * n), this rank's partial sums -> output (n): the
// sum over the group of block rank().
void reduce_scatter_for_tp(Comm& comm, const Tensor& input, Tensor& output);
// input (n) -> output (tp * n): block r holds rank r's input.
void all_gather_for_tp(Comm& comm, const Tensor& input, Tensor& output);

// x (..., T / tp, C), this rank's share -> (..., T, C), the whole (block r of its tokens = rank r's
// share); backward reduce-scatters (sums) the gradient, so each rank gets the gradient of its share
// summed over the group (the job copy_to_tp's all-reduce does without sequence parallelism).
Variable all_gather_from_sp(const Variable& x, const TensorParallel& tp);

// x (..., T, C), this rank's partial sums -> (..., T / tp, C), the sum over the group of this rank's
// share; backward all-gathers the gradient. A T that tp does not divide is an nd::Error.
Variable reduce_scatter_to_sp(const Variable& x, const TensorParallel& tp);

// Into a tensor-parallel region: copy_to_tp(x), or all_gather_from_sp(x) when tp splits tokens.
Variable enter_tp_region(const Variable& x, const TensorParallel& tp);
// Out of it, from this rank's partial sums: reduce_from_tp(x), or reduce_scatter_to_sp(x).
Variable leave_tp_region(const Variable& x, const TensorParallel& tp);

// ops::dropout of the whole restricted to this rank's share x (ops::dropout_share): the same masks
// as at tp = 1, and every rank's generator advances by the whole tensor's counters.
Variable token_dropout(const Variable& x, float p, Generator& gen, bool training, const TensorParallel& tp);

// The column-parallel linear under sequence parallelism: x (B, T / tp, K), this rank's share; w
// (N / tp, K) and b its rows -> (B, T, N / tp), every token (ops::gathered_linear: the all-gather
// in chunks that overlap the GEMMs when tp.overlap, only the share kept for backward).
// With `gelu` the output is gelu of it, the GELU in the GEMM's epilogue (the MLP's c_fc).
Variable gathered_column_linear(const Variable& x, const Variable& w, const Variable& b, const TensorParallel& tp,
                                bool gelu = false);
// The row-parallel linear under sequence parallelism: x (B, T, K / tp), w (N, K / tp), b (N) or
// undefined -> (B, T / tp, N), this rank's share of the summed partial products plus b
// (ops::scattered_linear: the reduce-scatter, the bias in rank 0's products; b's gradient is this
// share's part, summed over the group by sum_gradients_over_tp).
Variable scattered_row_linear(const Variable& x, const Variable& w, const TensorParallel& tp,
                              const Variable& b = Variable());
// The group's collectives for ops::gathered_linear and ops::scattered_linear, with `chunks` chunks
// (0 = unsplit). Their gathers' wholes come from PeerMemory::gather_scratch where the comm has one.
ops::SplitCollectives split_collectives(const TensorParallel& tp, int chunks);
// How many chunks the split collectives of a share of `share_bytes` use: 0 (unsplit) without
// `overlap` (TensorParallel::overlap), else one per 8 MiB, between 2 and 8 (gathered_column_linear
// over a copy-engine comm takes 1: dist/comm/peer_copy.h).
int split_chunks(bool overlap, int64_t share_bytes);

// Sums the gradients of `params` over the group in place, in one all-reduce of a flat buffer:
// the parameters of token-wise regions, each of whose ranks saw only its share of the tokens.
// Parameters without a gradient are skipped (the same ones on every rank).
void sum_gradients_over_tp(const std::vector<Variable>& params, const TensorParallel& tp);
// The same over gradient tensors (e.g. the f32 main gradients of the flat buffers), one dtype.
void sum_gradients_over_tp(std::vector<Tensor> grads, const TensorParallel& tp);

// Under sequence parallelism (tp.splits_tokens()) the replicated parameters of `model` (those whose
// ParamInfo does not split them: LayerNorms, row-parallel biases, wpe) saw only this rank's tokens:
// after backward, this sums their gradients over the group in one all-reduce, so they equal the
// tp = 1 gradients. A no-op otherwise. Call it on every rank of the group, before clipping (it is
// part of finalize_grads).
void sum_sequence_parallel_gradients(const nn::Module& model, const TensorParallel& tp);
// The same over the gradients the data-parallel engine holds after its finish (held_gradient: the
// flat buffers' f32 main gradients where they exist, or under ZeRO this rank's pieces of them, in the
// flat gradients or the gradient shard). The group's ranks share the flat layout and the dp rank,
// so they hold the same pieces.
void sum_sequence_parallel_gradients(const nn::Module& model, const TensorParallel& tp,
                                     const DataParallelEngine& engine, FlatParams& flat);

}  // namespace nd::dist
