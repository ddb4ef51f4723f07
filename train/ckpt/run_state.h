// Save and resume: everything a run needs to continue exactly where it stopped (parameters,
// AdamW moments and step count, the dropout stream, the data position, step, tokens and best val
// loss) in and out of an HDF5 checkpoint in the run's output directory.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "data/loader.h"
#include "dist/comm/comm.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/gpt.h"
#include "train/ckpt/checkpoint.h"
#include "train/config.h"
#include "train/loss_scaler.h"
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
  const dist::TensorParallel& tp;  // the model's tensor-parallel group
  AdamW& optimizer;
  BatchLoader& loader;
  Generator& dropout_gen;
  const std::string& tokenizer_text;
  int world_size;
  LossScaler* loss_scaler = nullptr;  // loss scaling only
  nn::Fp8LinearScaling* fp8 = nullptr;  // --fp8 only: its amax histories and scales (fp8_checkpoint.h)
};

// The config, state and tokenizer a checkpoint of the run holds beside its tensors (which
// RunSaver, run_saver.h, writes).
CheckpointData run_metadata(const RunParts& run, const RunCounters& counters);

// Collective over `world`: loads the newest checkpoint in --out that is complete and intact into
// the run, each rank reading only the slices it holds, whatever layout (tp, dp, world size)
// wrote it. A newer checkpoint that cannot be read (a missing part, a checksum mismatch, a
// damaged index) on any rank is skipped with one line in `skipped`. Returns the path, or "" when
// there is none. nd::Error when the checkpoint holds another model or another tokenizer. The FP8
// scaling state is restored before the first step; `notes` gets what the user should know of it
// (state missing, ignored, or of another history length).
std::string resume_run(RunParts& run, RunCounters& counters, dist::Comm& world, std::vector<std::string>& skipped,
                       std::vector<std::string>* notes = nullptr);

}  // namespace nd::train
