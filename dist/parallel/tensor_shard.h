// The collective side of sharded parameters: a full tensor gathered from the shards the ranks of
// a group hold (split as nn/shard_spec.h describes).
#pragma once
#include "dist/comm/comm.h"
#include "nn/shard_spec.h"

namespace nd::dist {

// Collective over the group `comm`: the full tensor, on the CPU, on every rank, from each rank's
// `shard` (on comm.device()). A replicated tensor comes back as a CPU copy.
Tensor gather_full_tensor(Comm& comm, const Tensor& shard, const nn::ShardSpec& spec);

}  // namespace nd::dist
