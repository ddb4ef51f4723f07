// The first part of a training step: the forward and backward passes over the step's
// micro-batches (Megatron's forward_backward_func). Without pipelining they run one after another
// and only the last backward reduces gradients; pipeline schedules (GPipe, 1F1B, interleaved)
// implement the same interface over the stages of a pipeline-parallel grid.
#pragma once
#include <vector>

#include "dist/parallel/data_parallel.h"
#include "nn/gpt.h"

namespace nd::train {

// What a schedule works on: the micro-batches in fixed device buffers, where their losses go, and
// the loss's backward seed (1 / micro-batches, told to the loss in its forward).
struct MicroBatches {
  const std::vector<Tensor>& inputs;   // (B, T) i32 each
  const std::vector<Tensor>& targets;  // (B, T) i32 each
  Tensor& losses;                      // (micro-batches), the loss's dtype: f32 (ops::loss_dtype)
  const Tensor& loss_scale;            // scalar, the loss's dtype
  const ops::LossGradient& loss_gradient;
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  // Queues every forward and backward of the step; gradients end in the flat buffers, the data-
  // parallel reduction launched (dist::DataParallelEngine::prepare_backward), not yet waited for.
  virtual void run(nn::GPT& model, dist::DataParallelEngine& data_parallel, MicroBatches& batches,
                   Generator& dropout_gen) = 0;
};

// Forward and backward of each micro-batch in turn (gradient accumulation).
class NoPipelining : public Schedule {
 public:
  void run(nn::GPT& model, dist::DataParallelEngine& data_parallel, MicroBatches& batches, Generator& dropout_gen) override;
};

}  // namespace nd::train
