// The linears at the edges of a sequence-parallel region (Megatron sequence parallelism with
// "collective matmul" / async TP): the column-parallel product of an all-gathered input and the
// row-parallel product whose partial sums are reduce-scattered, each split into chunks so that a
// chunk's collective runs on the communicator's stream while another chunk's GEMM runs. Autograd
// does not communicate: dist/parallel/sequence_parallel.cpp passes the collectives in (SplitCollectives).
#pragma once
#include <cstdint>
#include <functional>

#include "autograd/variable.h"

namespace nd::ops {

// The group's collectives over dim-0 blocks of contiguous buffers, started on the comm's stream
// after the compute queued so far; each returns the function that orders later compute after it
// (dist/comm/comm.h's CommWork::wait). gather: shard (n) -> whole (ranks * n), block r = rank r's shard.
// scatter: whole (ranks * n), this rank's partial sums -> shard (n), the sum of block rank.
struct SplitCollectives {
  using Wait = std::function<void()>;
  int ranks = 1;
  int rank = 0;
  // Forward chunks per rank block (rows of the share): 0 = unsplit (one collective, then one GEMM);
  // k >= 1 = k collectives, GEMMs on the chunks already here while the next ones move.
  int chunks = 0;
  std::function<Wait(const Tensor& shard, Tensor& whole)> gather;
  std::function<Wait(const Tensor& whole, Tensor& shard)> scatter;
  // Optional: the reduce-scatter in two halves (dist::PeerMemory::reduce_scatter_send), where halves(shard)
  // says the comm has them for this size (alike on every rank): send(whole, shard) starts moving
  // every block of whole but this rank's, which need not be computed yet, and returns the function
  // that reduces once this rank's block is queued, returning the Wait. The GEMMs of the other
  // ranks' blocks then run first and this rank's own block's hides their transfer.
  std::function<bool(const Tensor& shard)> halves;
  std::function<std::function<Wait()>(const Tensor& whole, Tensor& shard)> send;
  // Optional: a buffer for a gather's whole (dist::PeerMemory::gather_scratch, which the copy engines
  // write straight into), else a new tensor; and a gather that may leave this rank's own block of
  // the whole unwritten, for the callers that read their own block from the share (else gather).
  std::function<Tensor(const Shape& shape, DType dtype)> whole;
  std::function<Wait(const Tensor& shard, Tensor& whole)> gather_others;
};

// Tokens: the whole (B, T, ...) flattened over (B, T) is split into `ranks` contiguous shares of S
// = B T / ranks tokens; rank r holds tokens [r S, (r + 1) S) as a (B, T / ranks, ...) tensor (for
// B > 1 its rows are not whole sequences: only token-wise ops may run on a share).
//
// x (B, Ts, K), this rank's share; w (N, K), b (N) or undefined -> (B, ranks * Ts, N): linear of the
// all-gathered whole, every token in order. Only x is kept for backward, which gathers it again on
// the comm stream while the input-gradient GEMM runs, then reduce-scatters the input gradient while
// the weight-gradient GEMM runs. With `gelu`, gelu(linear(...)) (GPT-2's tanh form) with the GELU in
// the GEMM's epilogue where the GPU has one (kernels/*/linear.h: linear_gelu_forward), as
// ops::gelu_mlp's c_fc; the GELU input is kept.
Variable gathered_linear(const Variable& x, const Variable& w, const Variable& b, const SplitCollectives& c,
                         bool gelu = false);

// x (B, T, K), the whole; w (N, K), b (N) or undefined -> (B, T / ranks, N): this rank's share of the
// sum over the group of the partial products x · wᵀ (the reduce-scatter), plus b once (in rank 0's
// products). Backward gathers the output gradient, computing this rank's own share's input and
// weight gradients while the others move; b's gradient is this rank's share's part only (the
// column sums of its output gradient), to be summed over the group like any replicated parameter's.
Variable scattered_linear(const Variable& x, const Variable& w, const SplitCollectives& c,
                          const Variable& b = Variable());

}  // namespace nd::ops
