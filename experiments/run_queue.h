// The runs of an experiment, trained one after another by every rank together through the
// trainer library (one communicator for the whole experiment). A run whose metrics.jsonl ends
// with the final record is finished and skipped; one that started but did not finish restarts
// with --resume (from its newest checkpoint, or from scratch when it has none). Either only while
// the folder's run.conf (train/run/run_settings_file.h) records the settings asked for now.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "train/config.h"

namespace nd::dist {
class FaultGuard;
}

namespace nd::experiments {

struct PlannedRun {
  std::string label;          // "no-warmup/seed1", for progress lines
  train::TrainConfig config;  // out_dir is the run's own directory
};

enum class RunStatus { New, Unfinished, Finished };
RunStatus run_status(const std::string& run_dir);

struct QueueOutcome {
  int trained = 0;  // runs trained (or completed) by this call
  int skipped = 0;  // runs found finished
  // A run was stopped by a signal (it saved; train/run/preemption.h): the queue stopped after it, the
  // experiment has no report yet, and the same command resumes it.
  bool stopped_by_signal = false;
};

// `command` prefixes the progress lines ("ablate"); `progress` is written on rank 0 only
// (nullptr = silent). Each run's step and eval lines go to RUN_DIR/train.log. Rank 0 decides
// which runs are finished and tells the others, so every rank trains the same runs. An input
// error (before any run trains) when a started folder was trained with other settings: the line
// names the folder and the first differing key. `guard` (nullptr: none) guards every run as it
// guards `nanodist train`'s (RunContext::fault_guard): a frozen peer or a communicator error in any run
// ends the process with train's fault line and status.
QueueOutcome run_queue(const std::vector<PlannedRun>& runs, dist::Comm& comm, const std::string& command,
                       std::ostream* progress, dist::FaultGuard* guard = nullptr);

}  // namespace nd::experiments
