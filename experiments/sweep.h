// `nanodist sweep`: a ladder of model sizes, each trained into OUT/<size>/ on its own token
// budget (--tokens-per-param R: R x N tokens, N the non-embedding parameters; or a fixed
// --max-iters), finished runs skipped, then the fits of sweep_analysis.h written as
// OUT/sweep.csv, OUT/fit.json and OUT/report.md. --lr-base-width W scales each size's lr by
// W / its width; --seeds K trains each size K times and fits the mean final val loss.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "experiments/experiment_args.h"
#include "experiments/run_queue.h"
#include "nn/gpt.h"

namespace nd::experiments {

// "2x64,4x128": one variant per size named "2x64", setting n-layer, n-embd and
// n-head = width / head_dim. nd::Error on a malformed entry or a width head_dim does not divide.
std::vector<VariantSpec> ladder_variants(const std::string& ladder, int head_dim);

// Parameters of the model outside the token and position embeddings.
int64_t non_embedding_params(const nn::GPTConfig& model);

// Steps that give a model of `n` non-embedding parameters `tokens_per_param` tokens per
// parameter at `tokens_per_step` tokens per step (at least one step).
int64_t steps_for_budget(int64_t n, double tokens_per_param, int64_t tokens_per_step);

// Trains the ladder's runs that are not finished on every rank of `comm`, each under `guard`
// (nullptr: none; run_queue), and fits the power law on rank 0.
QueueOutcome run_sweep(const ExperimentArgs& args, dist::Comm& comm, std::ostream* progress,
                        dist::FaultGuard* guard = nullptr);

}  // namespace nd::experiments
