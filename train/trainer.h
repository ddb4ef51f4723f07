// The training loop of `nanodist train`: data loaders over DIR/train.bin and DIR/val.bin, the GPT,
// gradient accumulation, AdamW with warmup + cosine schedule and clipping, evals, step lines on
// rank 0, OUT/metrics.jsonl, HDF5 checkpoints and exact resume. A library, so tests drive it
// in-process; the distributed parts plug in through RunContext.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <vector>

#include "autograd/variable.h"
#include "train/config.h"

namespace nd::train {

// Where this process stands in a run, and the hooks a data-parallel run fills in. The defaults
// are one rank and no communication.
struct RunContext {
  int rank = 0;
  int world_size = 1;
  std::ostream* log = nullptr;  // step and eval lines (rank 0 only); nullptr = silent
  // Sums gradients over the data-parallel ranks and divides by their count, between backward
  // and clipping. Empty = single rank.
  std::function<void(std::vector<Variable>& params)> allreduce_gradients;
  // Mean of a scalar over the data-parallel ranks (eval losses, logged train loss).
  std::function<double(double)> mean_over_ranks;
  // True when any rank says true (stop on --max-seconds together).
  std::function<bool(bool)> any_rank;
  // The device's peak FLOP/s for MFU; 0 = unknown (the step line shows GFLOP/s instead).
  double peak_flops = 0.0;
};

struct TrainResult {
  int64_t first_step = 0;           // 0, or the step a resumed run started from
  int64_t steps_done = 0;           // total optimizer steps after this run (resumed ones included)
  std::vector<double> step_losses;  // mean micro-batch loss of each step this run took
  double best_val_loss = 0;         // +inf when no eval ran
  double last_val_loss = 0;
  int64_t params = 0;
  int64_t tokens = 0;               // training tokens over all ranks, resumed ones included
  bool diverged = false;            // stopped on a non-finite loss
  std::string last_checkpoint;
};

// Runs training as configured; nd::Error on bad input (missing or malformed data, a checkpoint
// of another model, an unwritable --out, ...).
TrainResult run_training(const TrainConfig& config, const RunContext& context = RunContext{});

}  // namespace nd::train
