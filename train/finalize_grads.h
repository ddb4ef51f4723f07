// The second part of a training step, the one place where gradients become final across the grid
// (Megatron's finalize_model_grads): the data-parallel finish (all-reduce of the buckets still in
// flight), the sum over the tensor-parallel group of the replicated parameters' gradients under
// sequence parallelism, and, once the pipeline splits the model, the sum of the tied embedding's
// gradient over the first and last stage (the grid's embedding group). The norm over the
// model-parallel ranks is the optimizer's (it sums the sharded runs' squares over that group).
#pragma once
#include "dist/parallel/data_parallel.h"
#include "dist/parallel/flat_params.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"

namespace nd::train {

// `tp`: the model's tensor-parallel group; `embedding`: the grid's embedding group (null or one
// rank: nothing to sum).
void finalize_grads(const nn::GPT& model, const dist::TensorParallel& tp, dist::DataParallelEngine& data_parallel,
                    dist::FlatParams& flat, dist::Comm* embedding = nullptr);

}  // namespace nd::train
