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

  // Installs the handlers again (keeping the ones to restore): libraries initialised after the
  // constructor (NCCL, CUDA, MPI components) may have put their own in place.
  void reinstall();
  bool requested() const;  // a signal has arrived
  // After a stop's checkpoint is written: the three signals are ignored from now until the process
  // ends (the destructor leaves them so), so that the launcher's own SIGTERM to ranks still
  // exiting (mpirun ends the job when the first rank exits non-zero) cannot turn their exit 75
  // into death by signal. Nothing is lost by then.
  void ignore_from_now();
  int signal() const;      // the first one's number (0 when none)
};

// "SIGTERM" for 15, ...
const char* signal_name(int signal);

}  // namespace nd::train
