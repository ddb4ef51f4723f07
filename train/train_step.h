// One optimizer step, the same sequence on every device, in three parts (Megatron's): the
// micro-batches go into fixed input buffers, then zero_grad and
//  1. the schedule (train/schedule.h): forward and backward over the micro-batches (the loss
//     seeded with 1/accum, a seed the loss is told in its forward so that it writes the logits'
//     gradient there), gradients into the flat buffers, data-parallel buckets launched;
//  2. finalize_grads (train/finalize_grads.h): every cross-rank gradient reduction;
//  3. the optimizer: global norm, clipping and AdamW over the flat runs. The micro-step losses land
// in one buffer on the model's device that is read back once per step. On a GPU the sequence
// queues no host synchronisation, so after a few eager steps it is captured once as a CUDA graph
// and replayed; the CPU runs it eagerly. Dropout's first Philox counter of the step is an input
// of the step too: it sits in the model's memory, and every dropout kernel reads it when it runs,
// so a replay draws the masks the eager step would draw.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/loader.h"
#include "dist/comm/comm.h"
#include "dist/parallel/data_parallel.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/step_graph.h"

namespace nd::train {

struct StepOptions {
  int grad_accum = 1;
  double grad_clip = 1.0;
  int batch_size = 1;
  int block_size = 1;
  // Capture the step as a CUDA graph (GPU only).
  bool cuda_graph = false;
  // Loss scaling (train/loss_scaler.h): the backward seed is scale/accum and the gradients are
  // divided by the scale after finalize_grads, before the norm; set_loss_scale picks the scale.
  bool loss_scaling = false;
  // The model's tensor-parallel group: finalize_grads sums the replicated parameters' gradients
  // over it under sequence parallelism.
  dist::TensorParallel tp;
};

struct StepResult {
  double loss = 0.0;       // this rank's mean micro-batch loss
  double grad_norm = 0.0;  // global gradient norm before clipping
  bool replayed = false;   // ran as a replay of the captured graph
  int64_t cuda_mallocs = 0;  // cudaMalloc calls during the step (none expected in the steady state)
  std::string graph_note;  // set on the step that captured the graph or gave up on it
};

class TrainStep {
 public:
  // `data_parallel` over the optimizer's flat buffers (one rank: it only accumulates). `world`
  // (null = one rank) decides together with every rank whether a capture succeeded: a graph
  // holds its rank's share of the collectives, so every rank replays or none does.
  TrainStep(nn::GPT& model, AdamW& optimizer, dist::DataParallelEngine& data_parallel, dist::Comm* world,
            const StepOptions& options);

  // A pipeline's schedule in place of NoPipelining, and the grid's embedding group whose ranks
  // sum the tied embedding's gradient (finalize_grads). Before the first step.
  void set_pipeline(std::unique_ptr<Schedule> schedule, dist::Comm* embedding);

  // Runs one step at learning rate `lr` on `batches` (grad_accum of them, on the CPU).
  StepResult run(const std::vector<Batch>& batches, double lr, Generator& dropout_gen);

  // The loss scale of the next steps (loss_scaling only; nd::Error otherwise unless 1). Changing it
  // rewrites two device scalars that the step reads, so a captured graph stays valid.
  void set_loss_scale(double scale);

 private:
  void enqueue(Generator& dropout_gen);
  void load_inputs(const std::vector<Batch>& batches, const Generator& dropout_gen);
  const uint64_t* step_counter() const { return static_cast<const uint64_t*>(step_counter_.raw_data()); }
  bool capture_agreed(Generator& dropout_gen, std::string* note);

  nn::GPT& model_;
  AdamW& optimizer_;
  dist::DataParallelEngine& data_parallel_;
  std::unique_ptr<Schedule> schedule_;
  dist::Comm* embedding_ = nullptr;
  dist::Comm* world_;
  StepOptions options_;
  Device device_;
  std::vector<Tensor> inputs_, targets_;  // (B, T) i32 per micro-step, fixed addresses
  Tensor loss_scale_;                     // scalar (f32) scale/accum: each backward adds scale * grad / accum
  Tensor inverse_loss_scale_;             // f32 (1) 1 / loss scale, read by the unscale (loss_scaling)
  double applied_loss_scale_ = 1.0;
  // loss_scale_ announced to the loss, which writes the logits' gradient over the logits in its
  // forward (the step reads nothing but the loss).
  ops::LossGradient loss_gradient_;
  Tensor losses_;                         // (accum) f32, one loss per micro-step
  Tensor step_counter_;  // 8 bytes (2 x i32, a u64): the dropout generator's offset at the step's start
  uint64_t graph_draws_ = 0;  // dropout counters the captured step reserves
  std::unique_ptr<PinnedUploader> uploader_;  // GPU only
  std::unique_ptr<StepGraph> graph_;          // GPU only
  bool use_graph_ = false;
  int eager_steps_ = 0;
};

}  // namespace nd::train
