// What a parameter is, beside its value: registered with it (Module::register_parameter) and read
// by whoever must treat parameters differently (the parallel layers, the data-parallel engines, the
// optimizer, checkpoints, statistics), so that no one recognises a parameter by its name.
#pragma once
#include <cstdint>

#include "nn/shard_spec.h"

namespace nd::nn {

struct ParamInfo {
  // How the full tensor splits over ranks that share the layer (replicated: dim -1), and into how
  // many pieces it is split in this model: the parameter holds one piece (1: the full tensor).
  ShardSpec split;
  int shards = 1;
  int block = -1;          // the block (transformer layer) holding it; -1 for none (embeddings, final norm)
  bool embedding = false;  // an embedding table (token or position)
  bool tied = false;       // read by two layers (the token embedding and the output head)
  bool decay = false;      // in AdamW's weight-decay group (matrices and embeddings, not biases or norms)
  int64_t used_rows = -1;  // the full tensor's rows past this are padding (zeros, never read); -1: none

  // The full tensor's shape from the shape of the piece this parameter holds.
  Shape full_shape(const Shape& piece) const {
    Shape out = piece;
    if (split.sharded()) out[split.dim] *= shards;
    return out;
  }
};

}  // namespace nd::nn
