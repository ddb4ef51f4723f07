// zero_layout: parameters' blocks to units, and the flat buffers' options per ZeRO stage.
#include "train/zero_layout.h"

namespace nd::train {

std::vector<int> block_units(const nn::NamedParamInfos& infos, bool tied_apart) {
  std::vector<int> units;
  for (const auto& [name, info] : infos) units.push_back(tied_apart && info.tied ? kTiedUnit : info.block);
  return units;
}

dist::FlatOptions zero_flat_options(int zero, int dp, const std::vector<int>& units) {
  dist::FlatOptions options;
  options.shards = zero > 0 ? dp : 1;
  if (zero == 1) {  // the blocks are not units here: only the tied embedding's segment stays apart
    bool apart = false;
    for (int u : units) apart = apart || u == kTiedUnit;
    if (apart)
      for (int u : units) options.units.push_back(u == kTiedUnit ? kTiedUnit : -1);
  }
  if (zero >= 2) {
    options.units = units;
    options.full_grads = false;
  }
  return options;
}

}  // namespace nd::train
