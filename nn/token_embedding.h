// The token embedding and the output head tied to it: one weight (rows, C), looked up by token id
// on the way in and multiplied by the hidden state on the way out, and the cross-entropy over its
// rows. The plain layer holds every row; a vocabulary-parallel one (dist/parallel/
// vocab_parallel_embedding.h) holds a range of them and never gathers the logits.
#pragma once
#include "autograd/ops.h"
#include "nn/init.h"
#include "nn/module.h"

namespace nd::nn {

struct EmbeddingSpec {
  int64_t rows = 0;       // the table's rows: the vocabulary, maybe padded
  int64_t used_rows = 0;  // the vocabulary: rows past it are padding, never looked up nor predicted
  int64_t dim = 0;
  double init_std = 0.02;
};

class TokenEmbedding : public Module {
 public:
  // weight (rows, dim): rows [0, used_rows) an N(0, init_std) draw from `gen` (used_rows * dim
  // counters), the padding zeros, so the padding changes neither the draw nor the model.
  TokenEmbedding(const EmbeddingSpec& spec, Generator& gen, Placement at);

  // idx (B, T) token ids -> token rows plus positions `wpe` (>= T, C): the hidden state (B, T, C).
  virtual Variable embed(const Tensor& idx, const Variable& wpe) const;
  // The tied head: x (B, T, C) -> logits (B, T, rows) (in FP8 once use_fp8 gave it scalars).
  virtual Variable logits(const Variable& x) const;
  // The scalar mean cross-entropy of `logits` (logits()'s) against targets (B, T) (-1 = ignore)
  // over the vocabulary [0, used_rows). With `loss_gradient` (null = none) the forward also writes
  // the logits' gradient for that seed (ops::LossGradient).
  virtual Variable loss(const Variable& logits, const Tensor& targets, const ops::LossGradient* loss_gradient) const;
  void use_fp8(Tensor scalars) { fp8_scalars_ = std::move(scalars); }
  bool fp8() const { return fp8_scalars_.defined(); }

  const EmbeddingSpec& spec() const { return spec_; }

  Variable weight;

 protected:
  // A layer holding piece `shards` of the rows, drawn by the caller.
  TokenEmbedding(const EmbeddingSpec& spec, Tensor weight, int shards);
  const Tensor& fp8_scalars() const { return fp8_scalars_; }

 private:
  EmbeddingSpec spec_;
  Tensor fp8_scalars_;
};

}  // namespace nd::nn
