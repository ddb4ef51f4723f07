// How a run's ZeRO stage lays out the flat buffers (dist::FlatOptions): shards for the dp ranks
// from stage 1 on, and from stage 2 on one unit per transformer block (its parameters named
// transformer.h.<i>.*) and no full-size gradient buffers, so the data-parallel engine stages a
// block's gradients on its own (dist/parallel/fully_sharded_data_parallel.h).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "dist/parallel/flat_params.h"

namespace nd::train {

// The block index of each parameter (transformer.h.<i>.* -> i), -1 for the others.
std::vector<int> block_units(const std::vector<std::pair<std::string, Variable>>& named_params);

dist::FlatOptions zero_flat_options(int zero, int dp, const std::vector<std::pair<std::string, Variable>>& named_params);

}  // namespace nd::train
