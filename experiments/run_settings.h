// The settings a run folder was started with, so a rerun never skips or resumes a run of other
// settings: RUN_DIR/settings.conf holds `key = value` lines (the `--config` format) for the number
// of ranks and every train flag, written before the run's first step.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "train/config.h"

namespace nd::experiments {

// (key, value as text) for every key a run's result depends on, in a fixed order: "ranks", then
// the train flags (dash-separated) but those in the ignore list of run_settings.cpp.
std::vector<std::pair<std::string, std::string>> run_settings(const train::TrainConfig& config, int world_size);

// Writes RUN_DIR/settings.conf for `config` (out_dir = RUN_DIR) atomically.
void write_run_settings(const train::TrainConfig& config, int world_size);

// "" when RUN_DIR/settings.conf records the same settings as `config` on `world_size` ranks,
// else one sentence naming the folder and the first differing key (old vs new value), or saying
// the folder has no record. nd::Error on an unreadable or malformed file.
std::string run_settings_mismatch(const train::TrainConfig& config, int world_size);

}  // namespace nd::experiments
