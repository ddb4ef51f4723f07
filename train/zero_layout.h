// How a run's ZeRO stage lays out the flat buffers (dist::FlatOptions): shards for the dp ranks
// from stage 1 on, and from stage 2 on one unit per transformer block (the block its ParamInfo
// names) and no full-size gradient buffers, so the data-parallel engine stages a block's gradients
// on its own (dist/parallel/fully_sharded_data_parallel.h).
#pragma once
#include <vector>

#include "dist/parallel/flat_params.h"
#include "nn/module.h"

namespace nd::train {

// The block index of each parameter (ParamInfo::block), -1 for the others.
std::vector<int> block_units(const nn::NamedParamInfos& infos);

// `units`: each parameter's block (block_units), registration order.
dist::FlatOptions zero_flat_options(int zero, int dp, const std::vector<int>& units);

}  // namespace nd::train
