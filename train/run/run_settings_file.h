// OUT/run.conf: the resolved settings of a run (every train flag, defaults included) in the
// --config format, written beside metrics.jsonl when the run starts, so `nanodist train --config
// OUT/run.conf` repeats it; a resume compares against it and says which keys changed.
#pragma once
#include <string>
#include <vector>

#include "train/config.h"

namespace nd::train {

// OUT/run.conf
std::string run_settings_path(const std::string& out_dir);

// Writes OUT/run.conf for `config` atomically (a comment names the ranks it ran on).
void write_run_settings_file(const TrainConfig& config, int world_size);

// "lr 0.001 -> 0.0005" for each key whose value differs from OUT/run.conf (and "ranks 1 -> 2");
// empty when they agree or there is no file. --resume and --overwrite, which say how a run was
// launched, not what it is, are not compared.
std::vector<std::string> changed_run_settings(const TrainConfig& config, int world_size);

// At the start of a run (rank 0): the lines to log about OUT/run.conf (on a resume, the keys that
// changed since it was written), then the file rewritten for this launch.
std::vector<std::string> update_run_settings_file(const TrainConfig& config, int world_size, bool resumed);

}  // namespace nd::train
