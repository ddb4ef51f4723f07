// The flags of `nanodist train`, one per TrainConfig field (train/config.h), plus --config FILE.
// ablate and sweep take the same flags, so they live apart from the train command.
#pragma once
#include "cli/flags.h"
#include "train/config.h"

namespace nd::cli {

FlagSet train_flag_set();

// A TrainConfig from parsed train flags (defaults, then the config file, then the command line).
train::TrainConfig train_config_from_flags(const ParsedFlags& flags);

// argv[0] = "train". Sets `help_requested` instead of parsing further when --help is given.
train::TrainConfig parse_train_args(int argc, const char* const* argv, bool* help_requested = nullptr);

}  // namespace nd::cli
