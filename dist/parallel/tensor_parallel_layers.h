// The layers of a tensor-parallel model (nn::LayerBuilder): Expand linears column-parallel, Project
// linears row-parallel, the token embedding with its tied head vocabulary-parallel, and, when tp
// splits tokens (sequence parallelism), a dropout that drops in this rank's share of the tokens
// what the whole would drop. The blocks built from them take and give the full hidden state on
// every rank, or this rank's share of its tokens under sequence parallelism.
#pragma once
#include "dist/parallel/tp_mappings.h"
#include "nn/layer_builder.h"

namespace nd::dist {

class TensorParallelLayers : public nn::LayerBuilder {
 public:
  explicit TensorParallelLayers(const TensorParallel& tp) : tp_(tp) {}

  // tp must divide n_head and n_embd (nd::Error naming the numbers).
  void check(const nn::BlockShape& shape) const override;
  std::shared_ptr<nn::Linear> linear(const nn::LinearSpec& spec, Generator& gen, nn::Placement at) const override;
  std::shared_ptr<nn::TokenEmbedding> token_embedding(const nn::EmbeddingSpec& spec, Generator& gen,
                                                      nn::Placement at) const override;
  std::shared_ptr<const nn::Dropout> dropout() const override;

 private:
  TensorParallel tp_;
};

// Raises nd::Error unless tp divides n_head and n_embd, naming the numbers.
void check_tensor_parallel_shape(int64_t n_embd, int n_head, int tp);

}  // namespace nd::dist
