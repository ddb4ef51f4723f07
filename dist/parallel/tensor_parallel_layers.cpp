// TensorParallelLayers: which parallel layer each of the model's seams gets.
#include "dist/parallel/tensor_parallel_layers.h"

#include "dist/parallel/parallel_linear.h"
#include "dist/parallel/sequence_parallel.h"
#include "dist/parallel/vocab_parallel_embedding.h"
#include "nn/layers.h"

namespace nd::dist {

namespace {

// Dropout of this rank's share of the tokens (dist::token_dropout): the masks the whole gets.
class TokenShareDropout : public nn::Dropout {
 public:
  explicit TokenShareDropout(const TensorParallel& tp) : tp_(tp) {}
  Variable forward(const Variable& x, float p, Generator& gen, bool training) const override {
    return token_dropout(x, p, gen, training, tp_);
  }

 private:
  TensorParallel tp_;
};

}  // namespace

void check_tensor_parallel_shape(int64_t n_embd, int n_head, int tp) {
  ND_CHECK(tp >= 1, "tensor-parallel size must be at least 1, got " << tp);
  ND_CHECK(n_head % tp == 0, "tensor-parallel size " << tp << " does not divide n_head " << n_head);
  ND_CHECK(n_embd % tp == 0, "tensor-parallel size " << tp << " does not divide n_embd " << n_embd);
}

void TensorParallelLayers::check(const nn::BlockShape& shape) const {
  check_tensor_parallel_shape(shape.n_embd, shape.n_head, tp_.size());
}

std::shared_ptr<nn::Linear> TensorParallelLayers::linear(const nn::LinearSpec& spec, Generator& gen,
                                                         nn::Placement at) const {
  if (spec.role == nn::LinearRole::Expand) return std::make_shared<ColumnParallelLinear>(spec, gen, at, tp_);
  return std::make_shared<RowParallelLinear>(spec, gen, at, tp_);
}

std::shared_ptr<nn::TokenEmbedding> TensorParallelLayers::token_embedding(const nn::EmbeddingSpec& spec,
                                                                          Generator& gen, nn::Placement at) const {
  return std::make_shared<VocabParallelEmbedding>(spec, gen, at, tp_);
}

std::shared_ptr<const nn::Dropout> TensorParallelLayers::dropout() const {
  if (!tp_.splits_tokens()) return nn::LayerBuilder::dropout();
  return std::make_shared<TokenShareDropout>(tp_);
}

}  // namespace nd::dist
