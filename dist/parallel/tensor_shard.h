// How a tensor-parallel parameter is split over the ranks of its group, and the conversions
// between a full tensor and its shards: checkpoints hold full tensors (gathered on save, sliced on
// load), so a run can resume at another tp.
#pragma once
#include <vector>

#include "dist/comm/comm.h"
#include "kernels/kernel_args.h"

namespace nd::dist {

struct ShardSpec {
  int dim = -1;   // -1: replicated (each rank holds the full tensor); else split along this dimension
  int parts = 1;  // the dimension packs `parts` equal blocks, each split on its own (c_attn: q, k, v)

  bool sharded() const { return dim >= 0; }
};

// The shape of one of `tp` shards of a tensor of shape `full`. Raises nd::Error naming the shape
// when the split dimension does not divide into parts * tp equal blocks.
Shape shard_shape(const Shape& full, const ShardSpec& spec, int tp);

// Rank `rank`'s shard of `full` (a CPU tensor, any dtype), as a new CPU tensor: along spec.dim,
// block [rank * L, (rank + 1) * L) of each of the parts, the parts' blocks kept in order.
Tensor shard_of(const Tensor& full, const ShardSpec& spec, int rank, int tp);

// Which elements of `full` rank `rank`'s shard holds, in the shard's order (shard_of's layout),
// so a rank can draw its shard of a full initialisation without the rest. Replicated: all of them.
ElementSlice shard_elements(const Shape& full, const ShardSpec& spec, int rank, int tp);

// The inverse: the full tensor from the shards of ranks 0 .. shards.size() - 1 (CPU tensors).
Tensor full_from_shards(const std::vector<Tensor>& shards, const ShardSpec& spec);

// Collective over the group `comm`: the full tensor, on the CPU, on every rank, from each rank's
// `shard` (on comm.device()). A replicated tensor comes back as a CPU copy.
Tensor gather_full_tensor(Comm& comm, const Tensor& shard, const ShardSpec& spec);

}  // namespace nd::dist
