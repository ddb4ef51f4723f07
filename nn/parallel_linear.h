// Megatron's tensor-parallel linear layers. ColumnParallelLinear splits the output features over
// the group (each rank computes its columns of the output); RowParallelLinear splits the input
// features (each rank computes a partial sum, all-reduced). A column-parallel layer feeding a
// row-parallel one needs no communication between them. Each rank draws only its slice of the
// weight, with the counters the unsplit Linear's draw gives those elements (nn/init.h), so any tp
// starts from the tp = 1 model; at tp = 1 both are exactly Linear.
#pragma once
#include "dist/parallel/tp_mappings.h"
#include "nn/layers.h"

namespace nd::nn {

class ColumnParallelLinear : public Module {
 public:
  // Full weight (out, in) ~ N(0, init_std), of which this rank keeps rows: with parts > 1 the
  // output packs `parts` equal blocks (c_attn: q, k, v), each split on its own, so the shard is
  // [block 0 rows of this rank; block 1 rows; ...]. weight (out / tp, in); bias (out / tp) = 0.
  ColumnParallelLinear(int64_t in, int64_t out, bool bias, double init_std, Generator& gen, Placement at,
                       const dist::TensorParallel& tp, int parts = 1);
  // x (..., in), the same on every rank -> (..., out / tp), this rank's output features. Backward
  // all-reduces x's gradient while the weight gradient is computed (dist::column_parallel_linear).
  // When tp splits tokens, x is this rank's share (B, T / tp, in) of the tokens, all-gathered in
  // chunks that overlap the GEMMs, and the output (B, T, out / tp) holds every token.
  Variable forward(const Variable& x) const;
  // Runs the GEMMs in FP8 (ops::fp8_linear) with these device scalars (nn/fp8_linear_scaling.h);
  // tp 1 only (nd::Error otherwise).
  void use_fp8(Tensor scalars);
  bool fp8() const { return fp8_scalars_.defined(); }
  const Tensor& fp8_scalars() const { return fp8_scalars_; }  // for a fused op (ops::fp8_gelu_mlp)

  Variable weight;
  Variable bias;  // undefined without bias

 private:
  dist::TensorParallel tp_;
  Tensor fp8_scalars_;  // FP8 GEMMs when defined
};

class RowParallelLinear : public Module {
 public:
  // Full weight (out, in) ~ N(0, init_std), of which this rank keeps columns: weight (out, in / tp).
  // bias (out) = 0, replicated, added once: by rank 0's product, before the all-reduce.
  RowParallelLinear(int64_t in, int64_t out, bool bias, double init_std, Generator& gen, Placement at,
                    const dist::TensorParallel& tp);
  // x (..., in / tp), this rank's input features -> (..., out), the full output on every rank;
  // when tp splits tokens, x (B, T, in / tp) -> (B, T / tp, out), this rank's share of the tokens.
  Variable forward(const Variable& x) const;
  // The bias this rank adds to its partial product: the bias on rank 0, none on the others (and
  // none anywhere when tp splits tokens: each share takes it after the reduce-scatter).
  Variable rank_bias() const;
  // The output from this rank's partial product x · weightᵀ + rank_bias() (under tp > 1): the sum
  // over the group (or this rank's share of it), which holds the bias once. For a product made by
  // another op (ops::gelu_mlp).
  Variable reduce_partial(const Variable& partial) const;
  // As ColumnParallelLinear::use_fp8.
  void use_fp8(Tensor scalars);
  bool fp8() const { return fp8_scalars_.defined(); }
  const Tensor& fp8_scalars() const { return fp8_scalars_; }

  Variable weight;
  Variable bias;  // undefined without bias

 private:
  dist::TensorParallel tp_;
  Tensor fp8_scalars_;  // FP8 GEMMs when defined
};

// This rank's shard by `spec` of a parameter of `full_shape` drawn as the unsplit layer draws it
// (N(0, std) from gen), placed at `at`; only the shard is drawn.
Tensor draw_shard(const Shape& full_shape, double std, Generator& gen, Placement at, const dist::ShardSpec& spec,
                  const dist::TensorParallel& tp);

}  // namespace nd::nn
