// How a parameter splits into equal pieces over ranks that share it (a description, no
// communication), and the conversions between a full tensor and its pieces: checkpoints hold full
// tensors (gathered on save, sliced on load), so a run can resume with another split.
#pragma once
#include <vector>

#include "kernels/kernel_args.h"
#include "tensor/tensor.h"

namespace nd::nn {

struct ShardSpec {
  int dim = -1;   // -1: replicated (each rank holds the full tensor); else split along this dimension
  int parts = 1;  // the dimension packs `parts` equal blocks, each split on its own (c_attn: q, k, v)

  bool sharded() const { return dim >= 0; }
};

// The shape of one of `n` shards of a tensor of shape `full`. Raises nd::Error naming the shape
// when the split dimension does not divide into parts * n equal blocks.
Shape shard_shape(const Shape& full, const ShardSpec& spec, int n);

// Shard `index` of `n` of `full` (a CPU tensor, any dtype), as a new CPU tensor: along spec.dim,
// block [index * L, (index + 1) * L) of each of the parts, the parts' blocks kept in order.
Tensor shard_of(const Tensor& full, const ShardSpec& spec, int index, int n);

// Which elements of `full` shard `index` of `n` holds, in the shard's order (shard_of's layout),
// so a rank can draw its shard of a full initialisation without the rest. Replicated: all of them.
ElementSlice shard_elements(const Shape& full, const ShardSpec& spec, int index, int n);

// The inverse: the full tensor from shards 0 .. shards.size() - 1 (CPU tensors).
Tensor full_from_shards(const std::vector<Tensor>& shards, const ShardSpec& spec);

}  // namespace nd::nn
