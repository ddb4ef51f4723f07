// zero_layout: parameter names to units, and the flat buffers' options per ZeRO stage.
#include "train/zero_layout.h"

#include <cctype>

namespace nd::train {

std::vector<int> block_units(const std::vector<std::pair<std::string, Variable>>& named_params) {
  static const std::string prefix = "transformer.h.";
  std::vector<int> units;
  for (const auto& [name, param] : named_params) {
    int unit = -1;
    if (name.compare(0, prefix.size(), prefix) == 0) {
      size_t end = prefix.size();
      while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
      if (end > prefix.size() && end < name.size() && name[end] == '.')
        unit = std::stoi(name.substr(prefix.size(), end - prefix.size()));
    }
    units.push_back(unit);
  }
  return units;
}

dist::FlatOptions zero_flat_options(int zero, int dp, const std::vector<std::pair<std::string, Variable>>& named_params) {
  dist::FlatOptions options;
  options.shards = zero > 0 ? dp : 1;
  if (zero >= 2) {
    options.units = block_units(named_params);
    options.full_grads = false;
  }
  return options;
}

}  // namespace nd::train
