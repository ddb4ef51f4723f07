// zero_layout: parameters' blocks to units, and the flat buffers' options per ZeRO stage.
#include "train/zero_layout.h"

namespace nd::train {

std::vector<int> block_units(const nn::NamedParamInfos& infos) {
  std::vector<int> units;
  for (const auto& [name, info] : infos) units.push_back(info.block);
  return units;
}

dist::FlatOptions zero_flat_options(int zero, int dp, const std::vector<int>& units) {
  dist::FlatOptions options;
  options.shards = zero > 0 ? dp : 1;
  if (zero >= 2) {
    options.units = units;
    options.full_grads = false;
  }
  return options;
}

}  // namespace nd::train
