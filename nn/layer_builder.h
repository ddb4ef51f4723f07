// Which layer a model gets for each of its seams (linears, the token embedding with its tied head,
// the dropout of the hidden state): the plain layers by default. A parallel plan passes its own
// builder (dist/parallel/tensor_parallel_layers.h), whose layers hold pieces of the weights and
// communicate inside their forward, so the model's code is the same for every split.
#pragma once
#include <memory>

#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/token_embedding.h"

namespace nd::nn {

struct BlockShape;

class LayerBuilder {
 public:
  virtual ~LayerBuilder() = default;
  // Raises nd::Error, naming the numbers, when these layers cannot build a block of this shape.
  virtual void check(const BlockShape&) const {}
  // Each draws its parameters from `gen` in the order the plain layer does, whatever part it keeps.
  virtual std::shared_ptr<Linear> linear(const LinearSpec& spec, Generator& gen, Placement at) const;
  virtual std::shared_ptr<TokenEmbedding> token_embedding(const EmbeddingSpec& spec, Generator& gen,
                                                          Placement at) const;
  virtual std::shared_ptr<const Dropout> dropout() const;
};

// The plain layers.
const LayerBuilder& plain_layers();

}  // namespace nd::nn
