#include "nn/layer_builder.h"

namespace nd::nn {

std::shared_ptr<Linear> LayerBuilder::linear(const LinearSpec& spec, Generator& gen, Placement at) const {
  return std::make_shared<Linear>(spec, gen, at);
}

std::shared_ptr<TokenEmbedding> LayerBuilder::token_embedding(const EmbeddingSpec& spec, Generator& gen,
                                                              Placement at) const {
  return std::make_shared<TokenEmbedding>(spec, gen, at);
}

std::shared_ptr<const Dropout> LayerBuilder::dropout() const { return std::make_shared<Dropout>(); }

const LayerBuilder& plain_layers() {
  static const LayerBuilder plain{};
  return plain;
}

}  // namespace nd::nn
