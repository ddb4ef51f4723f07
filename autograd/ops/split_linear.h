// The linears at the edges of a sequence-parallel region (Megatron sequence parallelism with
// "collective matmul" / async TP): the column-parallel product of an all-gathered input and the
// row-parallel product whose partial sums are reduce-scattered, each split into chunks so that a
// chunk's collective runs on the communicator's stream while another chunk's GEMM runs. Autograd
// does not communicate: dist/sequence_parallel.cpp passes the collectives in (SplitCollectives).
#pragma once
#include <cstdint>
#include <functional>

#include "autograd/variable.h"

namespace nd::ops {

// The group's collectives over dim-0 blocks of contiguous buffers, started on the comm's stream
// after the compute queued so far; each returns the function that orders later compute after it
// (dist/comm.h's CommWork::wait). gather: shard (n) -> whole (ranks * n), block r = rank r's shard.
// scatter: whole (ranks * n), this rank's partial sums -> shard (n), the sum of block rank.
struct SplitCollectives {
  int ranks = 1;
  int rank = 0;
  // Forward chunks per rank block (rows of the share): 0 = unsplit (one collective, then one GEMM);
  // k >= 1 = k collectives, GEMMs on the chunks already here while the next ones move.
  int chunks = 0;
  std::function<std::function<void()>(const Tensor& shard, Tensor& whole)> gather;
  std::function<std::function<void()>(const Tensor& whole, Tensor& shard)> scatter;
};

// x (S, ..., K), this rank's share of the tokens; w (N, K), b (N) or undefined -> (ranks * S, ..., N):
// linear(all-gather(x)) with the gathered tokens in rank order (block r = rank r's share). Only x
// is kept for backward, which gathers it again on the comm stream while the input-gradient GEMM
// runs, then reduce-scatters the input gradient while the weight-gradient GEMM runs. With `gelu`,
// gelu(linear(...)) (GPT-2's tanh form) with the GELU in the GEMM's epilogue where the GPU has one
// (kernels/*/linear.h: linear_gelu_forward), as ops::gelu_mlp's c_fc; the GELU input is kept.
Variable gathered_linear(const Variable& x, const Variable& w, const Variable& b, const SplitCollectives& c,
                         bool gelu = false);

// Where the input of scattered_linear comes in another token order than rank order (the attention's
// output, in sequence order): to_ranked(x) gives the rank-ordered rows (a copy or a view),
// from_ranked(dx) turns a rank-ordered gradient back into x's order.
struct RowOrder {
  std::function<Tensor(const Tensor&)> to_ranked, from_ranked;
};

// x (ranks * S, ..., K), the tokens in rank order; w (N, K) -> (S, ..., N): the reduce-scatter of
// this rank's partial products x · wᵀ, i.e. the sum over the group of block `rank`. No bias (add
// it after, once). Backward gathers the output gradient, computing this rank's own block's input
// gradient while the others move. With `order`, x is in that other order: the op regroups it into
// a temporary in the forward and again in the backward, and keeps only x itself (which its
// producer keeps anyway), not a regrouped copy.
Variable scattered_linear(const Variable& x, const Variable& w, const SplitCollectives& c,
                          const RowOrder* order = nullptr);

}  // namespace nd::ops
