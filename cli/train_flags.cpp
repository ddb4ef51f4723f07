// Train flags from TrainConfig's field list: name, type, default, help and group all come from
// train_config_fields(TrainConfig{}), so the flag table and the struct never drift apart.
#include "cli/train_flags.h"

#include <map>

#include "train/run/run_settings_file.h"

namespace nd::cli {

FlagSet train_flag_set() {
  FlagSet set("train", "--data DIR --out DIR [--config FILE] [flags]");
  set.allow_config_file();
  for (const train::ConfigField& f : train::train_config_fields(train::TrainConfig{})) {
    FlagSpec spec;
    spec.name = f.name;
    spec.default_value = f.text;
    spec.help = f.help;
    spec.group = f.group;
    spec.type = f.type;
    spec.aliases = f.aliases;
    set.add(spec);
  }
  return set;
}

train::TrainConfig train_config_from_flags(const ParsedFlags& flags) {
  train::TrainConfig config;
  for (const train::ConfigField& f : train::train_config_fields(config))
    train::set_train_config_field(config, f.name, flags.get_string(f.name), flags.origin(f.name));
  // --resume continues the run in --out as it was launched (nanoGPT's init_from='resume'): a flag
  // given neither on the command line nor in --config takes its value from OUT/run.conf.
  if (config.checkpoint.resume && !config.checkpoint.out_dir.empty()) {
    const std::string record = train::run_settings_path(config.checkpoint.out_dir);
    std::map<std::string, std::string> recorded = train::read_run_settings_file(config.checkpoint.out_dir);
    // run.conf holds the resolved decay end: one equal to the steps followed --max-iters, and
    // keeps following it when the resume runs longer.
    if (recorded.count("lr-decay-iters") && recorded["lr-decay-iters"] == recorded["max-iters"])
      recorded.erase("lr-decay-iters");
    for (const auto& [key, text] : recorded)
      if (flags.values.count(key) && !flags.has(key) && key != "out")
        train::set_train_config_field(config, key, text, "'" + key + "' in " + record);
  }
  return config;
}

train::TrainConfig parse_train_args(int argc, const char* const* argv, bool* help_requested) {
  ParsedFlags flags = train_flag_set().parse(argc, argv);
  if (help_requested) *help_requested = flags.help_requested;
  if (flags.help_requested) return train::TrainConfig{};
  return train_config_from_flags(flags);
}

}  // namespace nd::cli
