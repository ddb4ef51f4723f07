// Save and resume: everything a run needs to continue exactly where it stopped (parameters,
// AdamW moments and step count, the dropout stream, the data position, step, tokens and best val
// loss) in and out of an HDF5 checkpoint in the run's output directory.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "data/loader.h"
#include "nn/gpt.h"
#include "train/config.h"
#include "train/optimizer.h"

namespace nd::train {

// The loop's own counters.
struct RunCounters {
  int64_t step = 0;
  int64_t tokens = 0;  // training tokens over all ranks
  double best_val_loss = std::numeric_limits<double>::infinity();
};

// The live pieces of a run that a checkpoint holds.
struct RunParts {
  const TrainConfig& config;
  const nn::GPTConfig& model_config;
  nn::GPT& model;
  AdamW& optimizer;
  BatchLoader& loader;
  Generator& dropout_gen;
  const std::string& tokenizer_text;
  int world_size;
};

// Writes OUT/ckpt_<step>.h5 atomically and prunes to --keep; returns its path. Under tensor
// parallelism every rank calls it (the full tensors are gathered over each tp group at once) and
// only the rank passing `write` writes (returning "" elsewhere); without it one rank may call it
// alone.
std::string save_run(const RunParts& run, const RunCounters& counters, bool write = true);

// Loads the newest complete checkpoint in --out into the run; returns its path, or "" when the
// directory holds none yet. nd::Error when it holds another model or another tokenizer.
std::string resume_run(RunParts& run, RunCounters& counters);

}  // namespace nd::train
