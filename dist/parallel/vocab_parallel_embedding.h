// The token embedding and its tied head split by vocabulary rows (Megatron's VocabParallelEmbedding
// with the parallel LM head and loss), nn::TokenEmbedding's tensor-parallel implementation: each
// rank holds rows [rank, rank + 1) * rows / tp of wte, looks up the tokens it holds (the others
// give zeros) and sums the rows over the group; the head computes this rank's columns of the
// logits, and the loss is the vocabulary-parallel cross-entropy, so the full logits never exist.
// The position embedding is added after the sum, so once; under sequence parallelism the sum is
// reduce-scattered instead, and each rank adds the positions of its share of the tokens.
#pragma once
#include "dist/parallel/tp_mappings.h"
#include "nn/token_embedding.h"

namespace nd::dist {

class VocabParallelEmbedding : public nn::TokenEmbedding {
 public:
  // This rank's rows of the plain layer's draw (nn::padded_rows_shard); tp must divide spec.rows.
  VocabParallelEmbedding(const nn::EmbeddingSpec& spec, Generator& gen, nn::Placement at, const TensorParallel& tp);
  // idx (B, T) -> (B, T, C), or this rank's share (B, T / tp, C) when tp splits tokens (a T that
  // tp does not divide is then an nd::Error).
  Variable embed(const Tensor& idx, const Variable& wpe) const override;
  // x (B, T, C) (or this rank's share) -> (B, T, rows / tp), this rank's columns of the logits (in
  // FP8 once use_fp8 gave it scalars).
  Variable logits(const Variable& x) const override;
  Variable loss(const Variable& logits, const Tensor& targets, const ops::LossGradient* loss_gradient) const override;

 private:
  TensorParallel tp_;
};

}  // namespace nd::dist
