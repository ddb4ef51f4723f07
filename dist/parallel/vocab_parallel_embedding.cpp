// VocabParallelEmbedding: this rank's rows, looked up, summed (or reduce-scattered) over the group.
#include "dist/parallel/vocab_parallel_embedding.h"

#include "autograd/ops/fp8_linear.h"
#include "autograd/ops/positions_share.h"
#include "autograd/parallel_ops.h"
#include "dist/parallel/sequence_parallel.h"

namespace nd::dist {

VocabParallelEmbedding::VocabParallelEmbedding(const nn::EmbeddingSpec& spec, Generator& gen, nn::Placement at,
                                               const TensorParallel& tp)
    : nn::TokenEmbedding(spec,
                         nn::padded_rows_shard(spec.rows, spec.used_rows, spec.dim, 0.0, spec.init_std, gen, at,
                                               tp.rank(), tp.size()),
                         tp.size()),
      tp_(tp) {}

Variable VocabParallelEmbedding::embed(const Tensor& idx, const Variable& wpe) const {
  ND_CHECK_INPUT(!tp_.splits_tokens() || idx.size(1) % tp_.size() == 0,
                 "sequence parallelism: tensor-parallel size " << tp_.size()
                                                               << " does not divide the sequence length of "
                                                               << idx.size(1));
  if (!tp_.active()) return nn::TokenEmbedding::embed(idx, wpe);
  // This rank's vocabulary rows; leave_tp_region sums (or reduce-scatters) them over the group.
  const int64_t vocab_start = static_cast<int64_t>(tp_.rank()) * weight.shape()[0];
  Variable own_rows = ops::vocab_parallel_embedding(idx, weight, vocab_start, spec().rows);
  if (!tp_.splits_tokens()) return ops::add_positions(leave_tp_region(own_rows, tp_), wpe);
  const int64_t share = idx.numel() / tp_.size();  // tokens [rank * share, (rank + 1) * share)
  return ops::add_positions_share(leave_tp_region(own_rows, tp_), wpe, tp_.rank() * share, idx.size(1));
}

// In FP8 the hidden state enters the tensor-parallel region on its own (copy_to_tp, or the
// all-gather of the tokens), so every rank quantises the same x, as ColumnParallelLinear does.
Variable VocabParallelEmbedding::logits(const Variable& x) const {
  if (fp8()) return ops::fp8_linear(enter_tp_region(x, tp_), weight, Variable(), fp8_scalars());
  return column_parallel_linear(x, weight, Variable(), tp_);
}

Variable VocabParallelEmbedding::loss(const Variable& logits, const Tensor& targets,
                                      const ops::LossGradient* loss_gradient) const {
  if (!tp_.active()) return nn::TokenEmbedding::loss(logits, targets, loss_gradient);
  return vocab_parallel_cross_entropy(logits, targets, spec().used_rows, tp_, loss_gradient);
}

}  // namespace nd::dist
