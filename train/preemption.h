// Preemption: SIGTERM (how SLURM and cloud schedulers preempt), SIGINT and SIGUSR1 (what mpirun
// forwards to its ranks) ask the run to stop. While a PreemptionSignals lives, the first such
// signal only sets a flag, which the training loop reads at the next step boundary, agrees on
// over all ranks, then saves and exits with kExitStoppedBySignal; a second signal ends the
// process at once (the signal's default action).
#pragma once

namespace nd::train {

class PreemptionSignals {
 public:
  PreemptionSignals();   // installs the handlers
  ~PreemptionSignals();  // restores the ones before
  PreemptionSignals(const PreemptionSignals&) = delete;
  PreemptionSignals& operator=(const PreemptionSignals&) = delete;

  bool requested() const;  // a signal has arrived
  int signal() const;      // the first one's number (0 when none)
};

// "SIGTERM" for 15, ...
const char* signal_name(int signal);

}  // namespace nd::train
