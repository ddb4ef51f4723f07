#include "nn/token_embedding.h"

#include "autograd/ops/fp8_linear.h"

namespace nd::nn {

TokenEmbedding::TokenEmbedding(const EmbeddingSpec& spec, Generator& gen, Placement at)
    : TokenEmbedding(spec, padded_rows_shard(spec.rows, spec.used_rows, spec.dim, 0.0, spec.init_std, gen, at), 1) {}

TokenEmbedding::TokenEmbedding(const EmbeddingSpec& spec, Tensor w, int shards) : spec_(spec) {
  ParamInfo info;
  info.split = ShardSpec{0, 1};  // by vocabulary rows
  info.shards = shards;
  info.embedding = true;
  info.tied = true;
  info.decay = true;
  info.used_rows = spec.used_rows;
  weight = register_parameter("weight", std::move(w), info);
}

Variable TokenEmbedding::embed(const Tensor& idx, const Variable& wpe) const {
  return ops::embedding(idx, weight, wpe);  // one fused lookup with positions
}

Variable TokenEmbedding::logits(const Variable& x) const {
  return fp8() ? ops::fp8_linear(x, weight, Variable(), fp8_scalars_) : ops::linear(x, weight, Variable());
}

Variable TokenEmbedding::loss(const Variable& logits, const Tensor& targets,
                              const ops::LossGradient* loss_gradient) const {
  if (loss_gradient) return ops::cross_entropy(logits, targets, spec_.used_rows, *loss_gradient);
  return ops::cross_entropy(logits, targets, spec_.used_rows);
}

}  // namespace nd::nn
