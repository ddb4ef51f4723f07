// The op timer's table for `nanodist train --op-times`: per op and shape, the
// device time per step, its share of the step's wall time, and the achieved TFLOP/s or GB/s.
#pragma once
#include <string>

#include "train/trainer.h"

namespace nd::cli {

// "" when the run timed no step.
std::string format_op_table(const train::TrainResult& result);

}  // namespace nd::cli
