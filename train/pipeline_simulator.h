// Runs pipeline programs (pipeline_plan.h) on simulated ranks, without a model: each rank goes
// through its groups and actions in order, a group ends when all its transfers have met their
// other side, and an action takes its cost. It finds what the runtime would get wrong (a rank
// that waits on a message no rank sends, a receive that would get another micro-batch's tensor,
// an action whose input was never computed) and times the schedule (makespan, bubble fraction).
#pragma once
#include <string>
#include <vector>

#include "train/pipeline_plan.h"

namespace nd::train {

// Time units of one pass of one stage (of one chunk under interleaving). Backward = input +
// weight passes.
struct PassCosts {
  double forward = 1.0;
  double backward_input = 1.0;
  double backward_weight = 1.0;
};

struct SimulatedSpan {
  PipeAction action;
  double start = 0.0, end = 0.0;
};

struct SimulationResult {
  std::string error;  // "" when the programs run to the end; else what went wrong, naming the rank
  double makespan = 0.0;
  // Idle time over the ideal (busy) time of a rank, the largest over ranks: Megatron's bubble.
  double bubble_fraction = 0.0;
  std::vector<std::vector<SimulatedSpan>> spans;  // per rank, in order
};

// When a posted transfer completes. A receive always once its send is posted.
enum class Delivery {
  Eager,        // a send at once (small MPI messages)
  Rendezvous,   // a send once its receive is posted (large MPI messages)
  // NCCL, the strict check for deadlocks: rendezvous, and a group moves only as a whole: none of
  // its transfers starts before every one of them meets its other side in a group the peer has
  // posted, the peer's group moving with it (pipeline_plan.h says why).
  WholeGroups,
};

// Runs `programs`: each rank posts its groups (posted_groups) and runs its actions in turn.
SimulationResult simulate_pipeline(const std::vector<RankProgram>& programs, const PipelineShape& shape,
                                   const PassCosts& costs, Delivery delivery);

}  // namespace nd::train
