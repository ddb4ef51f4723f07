// Learning-rate schedules that run but do not do what their flags say: a warmup that outlasts the
// run (the lr never reaches --lr) or a decay the run stops before finishing (it never reaches
// --min-lr). Not errors: a short test run may mean either; the CLI prints them as warnings.
#pragma once
#include <string>
#include <vector>

#include "train/config.h"

namespace nd::train {

// One sentence per problem of a resolved config's schedule (lr_decay_iters filled in); none for
// --fit-schedule, which sets the steps, warmup and decay itself.
std::vector<std::string> schedule_warnings(const TrainConfig& config);

}  // namespace nd::train
