// The flags of `nanodist ablate` and `nanodist sweep`: every train flag plus the experiment's
// own, layered as defaults < --config FILE < the --experiment file's base < the command line <
// a variant's overrides, and the TrainConfig of each variant built from those layers.
#pragma once
#include <string>
#include <vector>

#include "experiments/experiment_file.h"
#include "train/config.h"
#include "train/flags.h"

namespace nd::experiments {

train::FlagSet ablate_flag_set();
train::FlagSet sweep_flag_set();

struct ExperimentArgs {
  train::ParsedFlags flags;  // every layer but the variants' merged
  ExperimentSpec spec;       // the --experiment file (no base, no variants without one)
  bool help_requested = false;
};

// argv[0] is the subcommand. nd::Error on any bad flag, experiment file line or missing
// --data/--out.
ExperimentArgs parse_experiment_args(const train::FlagSet& set, int argc, const char* const* argv);

// `flags` with `settings` laid over them; "x<factor>" multiplies the value underneath.
train::ParsedFlags with_settings(train::ParsedFlags flags, const std::vector<Setting>& settings);

// The run config of `variant` (nullptr = the control), out_dir left as the base's.
train::TrainConfig variant_config(const train::ParsedFlags& base, const VariantSpec* variant);

// The settings of a variant as text, "lr = x10, min-lr = x10" ("" for none).
std::string describe_settings(const std::vector<Setting>& settings);

}  // namespace nd::experiments
