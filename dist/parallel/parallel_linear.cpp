// The tensor-parallel linear layers: initialisation by drawing this rank's slice, and the
// row-parallel forward (partial products, the bias in rank 0's, all-reduce; under sequence
// parallelism a chunked reduce-scatter to this rank's share, dist::scattered_row_linear, the bias
// again in rank 0's products). In FP8 both layers run ops::fp8_linear on their shard between the
// plain mappings (no chunked overlap).
#include "dist/parallel/parallel_linear.h"

#include "autograd/ops/fp8_linear.h"
#include "autograd/parallel_ops.h"
#include "dist/parallel/sequence_parallel.h"

namespace nd::dist {

namespace {

// This rank's shard of the spec's weight, drawn as the unsplit layer draws it.
Tensor weight_shard(const nn::LinearSpec& spec, Generator& gen, nn::Placement at, const TensorParallel& tp) {
  return nn::normal_shard({spec.out, spec.in}, 0.0, spec.init_std, gen, at, spec.weight_split(), tp.rank(), tp.size());
}

Tensor bias_shard(const nn::LinearSpec& spec, nn::Placement at, const TensorParallel& tp) {
  if (!spec.bias) return Tensor();
  return Tensor::zeros(nn::shard_shape({spec.out}, spec.bias_split(), tp.size()), at.dtype, at.device);
}

}  // namespace

ColumnParallelLinear::ColumnParallelLinear(const nn::LinearSpec& spec, Generator& gen, nn::Placement at,
                                           const TensorParallel& tp)
    : nn::Linear(spec, weight_shard(spec, gen, at, tp), bias_shard(spec, at, tp), tp.size()), tp_(tp) {
  ND_CHECK(spec.role == nn::LinearRole::Expand, "ColumnParallelLinear: an Expand linear splits by output features");
}

RowParallelLinear::RowParallelLinear(const nn::LinearSpec& spec, Generator& gen, nn::Placement at,
                                     const TensorParallel& tp)
    : nn::Linear(spec, weight_shard(spec, gen, at, tp), bias_shard(spec, at, tp), tp.size()), tp_(tp) {
  ND_CHECK(spec.role == nn::LinearRole::Project, "RowParallelLinear: a Project linear splits by input features");
}

// In FP8 the input enters the tensor-parallel region on its own (copy_to_tp, or the all-gather of
// the tokens) and the FP8 GEMM reads it whole: every rank quantises the same x with the same scale.
Variable ColumnParallelLinear::forward(const Variable& x) const {
  if (fp8()) return ops::fp8_linear(gemm_input(x), weight, bias, fp8_scalars());
  return column_parallel_linear(x, weight, bias, tp_);
}

Variable ColumnParallelLinear::forward_gelu(const Variable& x) const {
  if (tp_.splits_tokens() && !fp8()) return gathered_column_linear(x, weight, bias, tp_, /*gelu=*/true);
  return ops::gelu(forward(x));
}

Variable ColumnParallelLinear::gemm_input(const Variable& x) const { return enter_tp_region(x, tp_); }

int64_t ColumnParallelLinear::first_output() const {
  return static_cast<int64_t>(tp_.rank()) * weight.shape()[0] / spec().parts;
}

// In FP8 this rank's partial product comes from the FP8 GEMM and is summed (or reduce-scattered)
// as the bf16 one's is.
Variable RowParallelLinear::forward(const Variable& x) const {
  if (fp8()) return output_from_gemm(ops::fp8_linear(x, weight, gemm_bias(), fp8_scalars()));
  if (!tp_.active()) return ops::linear(x, weight, bias);
  if (tp_.splits_tokens()) return scattered_row_linear(x, weight, tp_, bias);
  return output_from_gemm(ops::linear(x, weight, gemm_bias()));
}

// The bias rides in rank 0's product (the GEMM's epilogue), so the sum holds it once with no pass
// of its own over the output, and no second (B, T, C) activation is kept for backward. Its
// gradient, the row sum of the output's gradient, is the same on every rank: rank 0's product
// computes it, the other ranks' with_bias_gradient.
// Under sequence parallelism forward() hands the bias to scattered_row_linear, which puts it in rank
// 0's products the same way; output_from_gemm's callers get it added to the share after the
// reduce-scatter.
Variable RowParallelLinear::gemm_bias() const {
  return tp_.rank() == 0 && !tp_.splits_tokens() ? bias : Variable();
}

Variable RowParallelLinear::output_from_gemm(const Variable& partial) const {
  Variable sum = leave_tp_region(partial, tp_);
  if (!bias.defined()) return sum;
  if (tp_.splits_tokens()) return ops::add_bias(sum, bias);
  return tp_.rank() != 0 ? ops::with_bias_gradient(sum, bias) : sum;
}

}  // namespace nd::dist
