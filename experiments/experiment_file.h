// An experiment file (configs/experiments/*.conf): a base config plus named variants, each a set
// of overrides. Lines before the first `[name]` section are the base; every line is
// `key = value` with the key of a flag. In a variant a numeric value may be written `x10`
// (ten times the base value: `lr = x10`). Parsing checks keys, types and names up front, so a
// typo in the last variant fails before any training time is spent.
#pragma once
#include <string>
#include <vector>

#include "cli/flags.h"

namespace nd::experiments {

struct Setting {
  std::string key;    // flag name, dash-separated
  std::string value;  // as written; "x<factor>" = the base value times factor (variants only)
  std::string where;  // "FILE:LINE", for error messages
};

struct VariantSpec {
  std::string name;
  std::string where;  // the line of its [name]
  std::vector<Setting> settings;
};

struct ExperimentSpec {
  std::string source;  // file path, or a label for built-in text
  std::vector<Setting> base;
  std::vector<VariantSpec> variants;  // in file order
};

// `base_keys`: the flags a base line may set (the subcommand's table); `variant_keys`: those a
// variant may set (the train flags). data, out, resume, config and experiment are never keys.
// nd::Error naming FILE:LINE on a malformed line, an unknown key, a bad value, a duplicate
// variant name or key, an empty section, a variant named "control" (the control is the base),
// and on a file with no settings and no variants.
ExperimentSpec parse_experiment(const std::string& text, const std::string& source, const cli::FlagSet& base_keys,
                                const cli::FlagSet& variant_keys);
ExperimentSpec read_experiment_file(const std::string& path, const cli::FlagSet& base_keys,
                                    const cli::FlagSet& variant_keys);

// True when `value` is a multiplier `x<factor>`; sets *factor.
bool parse_multiplier(const std::string& value, double* factor);

}  // namespace nd::experiments
