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

// `rendezvous`: a send completes only once its receive is posted (NCCL's and large MPI messages'
// behaviour; the strict check for deadlocks); otherwise sends complete when posted.
SimulationResult simulate_pipeline(const std::vector<RankProgram>& programs, const PipelineShape& shape,
                                   const PassCosts& costs, bool rendezvous);

}  // namespace nd::train
