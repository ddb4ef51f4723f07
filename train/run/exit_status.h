// The process exit statuses of `nanodist train` (and of ablate and sweep, which pass on their
// runs'), read by scripts/train_resilient.sh and the experiment drivers. 75 is sysexits'
// EX_TEMPFAIL: the job stopped cleanly and can be requeued with --resume.
#pragma once

namespace nd::train {

constexpr int kExitDone = 0;
constexpr int kExitError = 1;               // one line `nanodist: error: ...`
constexpr int kExitDiverged = 3;            // a non-finite loss or gradient with no skip left
constexpr int kExitStoppedBySignal = 75;    // SIGTERM/SIGINT/SIGUSR1: saved, then stopped

}  // namespace nd::train
