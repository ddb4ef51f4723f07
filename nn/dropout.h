// Dropout of the hidden state between layers, (B, T, C): ops::dropout. Its own class because a
// layout that gives each rank a share of the tokens (sequence parallelism) replaces it with one
// that drops, in the share, what this drops in the whole (LayerBuilder::dropout).
#pragma once
#include "autograd/ops.h"

namespace nd::nn {

class Dropout {
 public:
  virtual ~Dropout() = default;
  virtual Variable forward(const Variable& x, float p, Generator& gen, bool training) const {
    return ops::dropout(x, p, gen, training);
  }
};

}  // namespace nd::nn
