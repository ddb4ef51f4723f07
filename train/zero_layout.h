// How a run's ZeRO stage lays out the flat buffers (dist::FlatOptions): shards for the dp ranks
// from stage 1 on, and from stage 2 on one unit per transformer block (the block its ParamInfo
// names) and no full-size gradient buffers, so the data-parallel engine stages a block's gradients
// on its own (dist/parallel/fully_sharded_data_parallel.h). Under a pipeline the tied embedding is a
// segment of its own from stage 1 on (kTiedUnit).
#pragma once
#include <vector>

#include "dist/parallel/flat_params.h"
#include "nn/module.h"

namespace nd::train {

// The unit of the tied token embedding that the first and the last pipeline stage each hold a copy
// of: outside the blocks, and a segment of the flat layout of its own (dist::FlatOptions::units), so
// that both stages cut their copies into the same shard slices whatever else they hold, and the sum
// of the copies' gradients (finalize_grads) runs on the pieces each rank owns.
constexpr int kTiedUnit = -2;

// The unit of each parameter: its block (ParamInfo::block), -1 for the others; with `tied_apart`
// (pp > 1) the tied embedding's is kTiedUnit.
std::vector<int> block_units(const nn::NamedParamInfos& infos, bool tied_apart = false);

// `units`: each parameter's unit (block_units), registration order. Stage 1 keeps only the tied
// embedding's segment apart (its buckets are cut by size elsewhere).
dist::FlatOptions zero_flat_options(int zero, int dp, const std::vector<int>& units);

}  // namespace nd::train
