// Evaluation during training: the mean loss over a fixed set of batches (the same rows at every
// eval), without gradients and with dropout off, averaged over the data-parallel ranks.
#pragma once
#include "data/loader.h"
#include "dist/comm/comm.h"
#include "nn/gpt.h"

namespace nd::train {

// Mean loss of `model` over batches 0..iters-1 of `reader`. `dp` (null = one rank) averages the
// ranks' means; every rank of it must call this together. The model must be in eval mode.
double mean_eval_loss(const nn::GPT& model, const EvalReader& reader, int iters, dist::Comm* dp);

// Mean of `value` over the ranks of `comm` (null or one rank: `value` itself). Collective.
double mean_over_ranks(double value, dist::Comm* comm);

}  // namespace nd::train
