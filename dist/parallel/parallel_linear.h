// Megatron's tensor-parallel linear layers, nn::Linear's parallel implementations (built by
// TensorParallelLayers, dist/parallel/tensor_parallel_layers.h). ColumnParallelLinear (an Expand
// linear) splits the output features over the group (each rank computes its columns of the output);
// RowParallelLinear (a Project linear) splits the input features (each rank computes a partial sum,
// all-reduced). A column-parallel layer feeding a row-parallel one needs no communication between
// them. Each rank draws only its slice of the weight, with the counters the unsplit Linear's draw
// gives those elements (nn/init.h), so any tp starts from the tp = 1 model; at tp = 1 both are
// exactly nn::Linear. Under sequence parallelism the gathers and scatters of the tokens live here.
#pragma once
#include "dist/parallel/tp_mappings.h"
#include "nn/linear.h"

namespace nd::dist {

class ColumnParallelLinear : public nn::Linear {
 public:
  // Full weight (out, in) ~ N(0, init_std), of which this rank keeps rows: with parts > 1 the
  // output packs `parts` equal blocks (c_attn: q, k, v), each split on its own, so the shard is
  // [block 0 rows of this rank; block 1 rows; ...]. weight (out / tp, in); bias (out / tp) = 0.
  ColumnParallelLinear(const nn::LinearSpec& spec, Generator& gen, nn::Placement at, const TensorParallel& tp);
  // x (..., in), the same on every rank -> (..., out / tp), this rank's output features. Backward
  // all-reduces x's gradient while the weight gradient is computed (dist::column_parallel_linear).
  // When tp splits tokens, x is this rank's share (B, T / tp, in) of the tokens, all-gathered in
  // chunks that overlap the GEMMs, and the output (B, T, out / tp) holds every token. In FP8
  // (use_fp8) the GEMMs are ops::fp8_linear's on x as gemm_input() gives it, collectives unsplit.
  Variable forward(const Variable& x) const override;
  // When tp splits tokens, the GELU runs in the gathered GEMMs' epilogue (gathered_column_linear),
  // but in FP8.
  Variable forward_gelu(const Variable& x) const override;
  bool gelu_in_epilogue() const override { return tp_.splits_tokens(); }
  // Into the tensor-parallel region: copy_to_tp, or the all-gather of the tokens (enter_tp_region).
  Variable gemm_input(const Variable& x) const override;
  int64_t first_output() const override;

 private:
  TensorParallel tp_;
};

class RowParallelLinear : public nn::Linear {
 public:
  // Full weight (out, in) ~ N(0, init_std), of which this rank keeps columns: weight (out, in / tp).
  // bias (out) = 0, replicated, added once: by rank 0's product, before the all-reduce.
  RowParallelLinear(const nn::LinearSpec& spec, Generator& gen, nn::Placement at, const TensorParallel& tp);
  // x (..., in / tp), this rank's input features -> (..., out), the full output on every rank;
  // when tp splits tokens, x (B, T, in / tp) -> (B, T / tp, out), this rank's share of the tokens.
  // In FP8 (use_fp8) the partial product is ops::fp8_linear's, then output_from_gemm.
  Variable forward(const Variable& x) const override;
  // The bias this rank adds to its partial product: the bias on rank 0, none on the others (and
  // none anywhere when tp splits tokens: each share takes it after the reduce-scatter).
  Variable gemm_bias() const override;
  // The output from this rank's partial product x · weightᵀ + gemm_bias() (under tp > 1): the sum
  // over the group (or this rank's share of it), which holds the bias once. For a product made by
  // another op (ops::gelu_mlp, ops::fp8_gelu_mlp).
  Variable output_from_gemm(const Variable& partial) const override;

 private:
  TensorParallel tp_;
};

}  // namespace nd::dist
