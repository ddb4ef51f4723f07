// What the trainer builds for a pipeline-parallel run (--pp > 1) from the config and the grid:
// this rank's stage of the GPT, the schedule for the step's schedule slot, and the split of the
// gradient norm over the model-parallel group. At --pp 1 the stage is the whole model.
#pragma once
#include <memory>

#include "dist/parallel/parallel_grid.h"
#include "nn/gpt.h"
#include "train/config.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "data/loader.h"

namespace nd::train {

nn::GPTStage pipeline_stage(const TrainConfig& config, const dist::ParallelGrid& grid);

// The hidden state between stages: (B, T, C), or (B / tp, T, C) under sequence parallelism.
Shape pipeline_hidden_shape(const TrainConfig& config, const dist::ParallelGrid& grid);

// The mean evaluation loss through the pipeline (pipeline_eval_loss). Collective over pp.
double pipeline_eval(const TrainConfig& config, const nn::GPT& model, const EvalReader& reader,
                     const dist::ParallelGrid& grid);

// The configured schedule (train/pipeline_schedule.h) over `model`, this rank's stage.
std::unique_ptr<Schedule> make_pipeline_schedule(const TrainConfig& config, const nn::GPTConfig& model_config,
                                                 nn::GPT& model, const dist::ParallelGrid& grid);

// The global norm over the model-parallel group (tp x pp): every gradient this rank counts is
// summed over the group; a tensor replicated over tp is counted by tp rank 0 only, and the last
// stage's copy of the tied embedding not at all (the first stage counts it).
void set_pipeline_norm(AdamW& optimizer, const nn::GPT& model, const dist::ParallelGrid& grid);

// The whole model's count from the stages' (`stage_count`: this stage's, tensor-parallel shards
// counted whole): summed over the pipeline group, the last stage's copy of the tied embedding
// left out. `stage_count` itself at pp 1. Collective over the pipeline group.
int64_t whole_model_count(int64_t stage_count, const nn::GPT& model, const dist::ParallelGrid& grid);

}  // namespace nd::train
