// OUT/run.conf: the resolved settings of a run (every train flag, defaults included, and the number
// of ranks in a comment) in the --config format, written by rank 0 when the run starts, so
// `nanodist train --config OUT/run.conf` repeats it. It is the run folder's one record of its
// settings: a resume names the keys that changed since, and ablate and sweep refuse to skip or
// resume a folder whose record differs from what they ask for now.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "train/config.h"

namespace nd::train {

// OUT/run.conf
std::string run_settings_path(const std::string& out_dir);

// Writes OUT/run.conf for `config` atomically (a comment names the ranks it ran on).
void write_run_settings_file(const TrainConfig& config, int world_size);

struct SettingChange {
  std::string key;                      // "ranks" or a flag name
  std::optional<std::string> recorded;  // the folder's value; none when it records no such key
  std::string now;
};

// The settings of `config` on `world_size` ranks that differ from the record in its out_dir,
// "ranks" first, then the flags in flag order, less those in `ignored` (--resume and --overwrite,
// which say how a run was launched, not what it is, are never recorded or compared). Values are
// compared as the flags read them ("cuda" = "cuda:0", "fp16" = "f16") and as the run resolves them
// (resolve_train_config). The record is run.conf, or the settings.conf an older ablate or sweep
// wrote beside it. None when the folder has neither.
std::optional<std::vector<SettingChange>> changed_run_settings(const TrainConfig& config, int world_size,
                                                               const std::set<std::string>& ignored = {});

// The key = value lines of OUT/run.conf (its ranks comment as "ranks"); empty when there is none.
std::map<std::string, std::string> read_run_settings_file(const std::string& out_dir);

// At the start of a run (rank 0): the lines to log about OUT/run.conf (on a resume, the keys that
// changed since it was written), then the file rewritten for this launch.
std::vector<std::string> update_run_settings_file(const TrainConfig& config, int world_size, bool resumed);

}  // namespace nd::train
