// The flags of `nanodist ablate` and `nanodist sweep`: every train flag plus the experiment's
// own, layered as defaults < --config FILE < the --experiment file's base < the command line <
// a variant's overrides, and the TrainConfig of each variant built from those layers.
#pragma once
#include <string>
#include <vector>

#include "experiments/experiment_file.h"
#include "train/config.h"
#include "cli/flags.h"

namespace nd::experiments {

cli::FlagSet ablate_flag_set();
cli::FlagSet sweep_flag_set();

struct ExperimentArgs {
  cli::ParsedFlags flags;  // every layer but the variants' merged
  ExperimentSpec spec;       // the --experiment file (no base, no variants without one)
  bool help_requested = false;
};

// The parsed command line of ablate or sweep with its --experiment file applied. nd::Error on any
// bad experiment file line or missing --data/--out.
ExperimentArgs experiment_args_from(const cli::FlagSet& set, const cli::ParsedFlags& flags);
// The same from argv (argv[0] is the subcommand); nd::Error on any bad flag too.
ExperimentArgs parse_experiment_args(const cli::FlagSet& set, int argc, const char* const* argv);

// `flags` with `settings` laid over them; "x<factor>" multiplies the value underneath.
cli::ParsedFlags with_settings(cli::ParsedFlags flags, const std::vector<Setting>& settings);

// The run config of `variant` (nullptr = the control), out_dir left as the base's.
train::TrainConfig variant_config(const cli::ParsedFlags& base, const VariantSpec* variant);

// The settings of a variant as text, "lr = x10, min-lr = x10" ("" for none).
std::string describe_settings(const std::vector<Setting>& settings);

}  // namespace nd::experiments
