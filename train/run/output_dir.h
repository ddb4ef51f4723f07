// The output directory belongs to one run: a fresh run refuses a --out that holds another run's
// checkpoints or metrics (unless --resume continues it or --overwrite clears it), any run refuses
// one that holds token data, and a second process on the same --out is refused through a lock
// (run_dir_lock.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "train/config.h"
#include "train/run/run_dir_lock.h"

namespace nd::train {

struct ClaimedOutputDir {
  std::unique_ptr<RunDirLock> lock;  // held until the run ends
  std::vector<std::string> notes;    // lines for the run's log (what --overwrite removed)
};

// Creates --out (checked writable), takes its lock, removes checkpoint temporaries a killed run
// left, and applies the rules above; nd::Error (input) saying what is there and what to pass.
// --overwrite removes only the files a run writes (ckpt_*.h5, metrics.jsonl, run.conf).
ClaimedOutputDir claim_output_dir(const TrainConfig& config);

// claim_output_dir on rank 0 of `world` (the only rank that writes to --out), agreed by every
// rank before any work: rank 0 throws its own error, the others one saying that rank 0 failed.
ClaimedOutputDir claim_output_dir_on_rank0(const TrainConfig& config, dist::Comm& world);

// "3 checkpoints (steps 100 to 300) and metrics.jsonl", or "" for a directory without a run.
std::string describe_previous_run(const std::string& out_dir);

}  // namespace nd::train
