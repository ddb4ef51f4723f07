// ablate and sweep: flags in, one world communicator for the whole experiment, the driver.
#include "experiments/commands.h"

#include <iostream>
#include <memory>

#include "dist/world.h"
#include "experiments/ablate.h"
#include "experiments/sweep.h"

namespace nd::experiments {
namespace {

using Driver = QueueOutcome (*)(const ExperimentArgs&, dist::Comm&, std::ostream*);

int run_experiment(const train::FlagSet& set, Driver driver, int argc, const char* const* argv) {
  ExperimentArgs args = parse_experiment_args(set, argc, argv);
  if (args.help_requested) {
    std::cout << set.help();
    return 0;
  }
  // Every rank joins the world communicator once (NCCL on GPUs picks this rank's device) and
  // trains every run of the experiment together.
  std::unique_ptr<dist::Comm> comm =
      dist::make_world_comm(parse_device(args.flags.get_string("device")), /*ring_transfers=*/false);
  driver(args, *comm, comm->rank() == 0 ? &std::cout : nullptr);
  return 0;
}

}  // namespace

int run_ablate_command(int argc, const char* const* argv) {
  return run_experiment(ablate_flag_set(), run_ablate, argc, argv);
}

int run_sweep_command(int argc, const char* const* argv) {
  return run_experiment(sweep_flag_set(), run_sweep, argc, argv);
}

}  // namespace nd::experiments
