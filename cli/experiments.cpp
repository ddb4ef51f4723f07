// `nanodist ablate` and `nanodist sweep`: the parsed flags with the --experiment file applied,
// one world communicator for the whole experiment (every run trains on it), and the driver.
#include <iostream>
#include <memory>

#include "cli/device_flag.h"
#include "cli/fault_guard_for.h"
#include "cli/subcommand.h"
#include "dist/comm/world.h"
#include "experiments/ablate.h"
#include "experiments/sweep.h"
#include "train/run/exit_status.h"

namespace nd::cli {
namespace {

using Driver = experiments::QueueOutcome (*)(const experiments::ExperimentArgs&, dist::Comm&, std::ostream*,
                                             dist::FaultGuard*);

int run_experiment(const FlagSet& set, Driver driver, const ParsedFlags& flags) {
  experiments::ExperimentArgs args = experiments::experiment_args_from(set, flags);
  // Every rank joins the world communicator once (NCCL on GPUs picks this rank's device).
  std::unique_ptr<dist::Comm> comm =
      dist::make_world_comm(device_from_flags(args.flags), /*ring_transfers=*/false);
  // The whole experiment is watched, every run as `nanodist train` is (a step past --comm-timeout,
  // a silent peer, a grid communicator's error): a fault ends it with train's line and status.
  std::unique_ptr<dist::FaultGuard> guard = fault_guard_for(*comm, args.flags.get_double("comm-timeout"),
                                                            args.flags.get_double("heartbeat-timeout"));
  const experiments::QueueOutcome outcome =
      driver(args, *comm, comm->rank() == 0 ? &std::cout : nullptr, guard.get());
  if (guard) guard->finish();
  // Stopped by a signal, as train is: the status a scheduler's requeue script looks for.
  return outcome.stopped_by_signal ? train::kExitStoppedBySignal : train::kExitDone;
}

int run_ablate(const ParsedFlags& flags) {
  return run_experiment(experiments::ablate_flag_set(), experiments::run_ablate, flags);
}

int run_sweep(const ParsedFlags& flags) {
  return run_experiment(experiments::sweep_flag_set(), experiments::run_sweep, flags);
}

}  // namespace

Subcommand ablate_command() {
  return {"ablate", "failure-mode ablations (warmup, clipping, LayerNorm, residuals, lr) against a control",
          experiments::ablate_flag_set, run_ablate};
}

Subcommand sweep_command() {
  return {"sweep", "a ladder of model sizes and a fitted power law L(N) = (E +) a N^-alpha",
          experiments::sweep_flag_set, run_sweep};
}

}  // namespace nd::cli
