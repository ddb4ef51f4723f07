// The tensor-parallel linear layers: initialisation by drawing this rank's slice, and the
// row-parallel forward (partial products, the bias in rank 0's, all-reduce; under sequence
// parallelism a chunked reduce-scatter to this rank's share, dist::scattered_row_linear, the bias
// again in rank 0's products).
#include "nn/parallel_linear.h"

#include "autograd/ops/fp8_linear.h"
#include "autograd/parallel_ops.h"
#include "dist/parallel/sequence_parallel.h"

namespace nd::nn {

Tensor draw_shard(const Shape& full_shape, double std, Generator& gen, Placement at, const dist::ShardSpec& spec,
                  const dist::TensorParallel& tp) {
  return normal_shard(full_shape, 0.0, std, gen, at, spec, tp.rank(), tp.size());
}

ColumnParallelLinear::ColumnParallelLinear(int64_t in, int64_t out, bool has_bias, double init_std, Generator& gen,
                                           Placement at, const dist::TensorParallel& tp, int parts)
    : tp_(tp) {
  const dist::ShardSpec rows{0, parts};
  weight = register_parameter("weight", draw_shard({out, in}, init_std, gen, at, rows, tp), rows);
  if (has_bias)
    bias = register_parameter("bias", Tensor::zeros(dist::shard_shape({out}, rows, tp.size()), at.dtype, at.device),
                              rows);
}

RowParallelLinear::RowParallelLinear(int64_t in, int64_t out, bool has_bias, double init_std, Generator& gen,
                                     Placement at, const dist::TensorParallel& tp)
    : tp_(tp) {
  const dist::ShardSpec columns{1, 1};
  weight = register_parameter("weight", draw_shard({out, in}, init_std, gen, at, columns, tp), columns);
  if (has_bias) bias = register_parameter("bias", Tensor::zeros({out}, at.dtype, at.device));
}

Variable ColumnParallelLinear::forward(const Variable& x) const {
  if (fp8()) return ops::fp8_linear(x, weight, bias, fp8_scalars_);
  return dist::column_parallel_linear(x, weight, bias, tp_);
}

void ColumnParallelLinear::use_fp8(Tensor scalars) {
  ND_CHECK(!tp_.active(), "FP8 linears run at tp 1 only");
  fp8_scalars_ = std::move(scalars);
}

void RowParallelLinear::use_fp8(Tensor scalars) {
  ND_CHECK(!tp_.active(), "FP8 linears run at tp 1 only");
  fp8_scalars_ = std::move(scalars);
}

Variable RowParallelLinear::forward(const Variable& x) const {
  if (fp8()) return ops::fp8_linear(x, weight, bias, fp8_scalars_);
  if (!tp_.active()) return ops::linear(x, weight, bias);
  if (tp_.splits_tokens()) return dist::scattered_row_linear(x, weight, tp_, bias);
  return reduce_partial(ops::linear(x, weight, rank_bias()));
}

// The bias rides in rank 0's product (the GEMM's epilogue), so the sum holds it once with no pass
// of its own over the output, and no second (B, T, C) activation is kept for backward. Its
// gradient, the row sum of the output's gradient, is the same on every rank: rank 0's product
// computes it, the other ranks' with_bias_gradient.
// Under sequence parallelism forward() hands the bias to scattered_row_linear, which puts it in rank
// 0's products the same way; reduce_partial's callers add it to the share after the reduce-scatter.
Variable RowParallelLinear::rank_bias() const {
  return tp_.rank() == 0 && !tp_.splits_tokens() ? bias : Variable();
}

Variable RowParallelLinear::reduce_partial(const Variable& partial) const {
  Variable sum = dist::leave_tp_region(partial, tp_);
  if (!bias.defined()) return sum;
  if (tp_.splits_tokens()) return ops::add_bias(sum, bias);
  return tp_.rank() != 0 ? ops::with_bias_gradient(sum, bias) : sum;
}

}  // namespace nd::nn
