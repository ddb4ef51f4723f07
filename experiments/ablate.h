// `nanodist ablate`: the control (the base config) and each variant over several seeds, each run
// into OUT/<variant>/seed<k>/ (seed = --seed + k, so every variant sees the same data order and
// initialisation per seed), finished runs skipped, then OUT/report.md and OUT/report.json.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "experiments/experiment_args.h"
#include "experiments/experiment_file.h"
#include "experiments/run_queue.h"

namespace nd::experiments {

// no-warmup, short-warmup (a tenth of the warmup), no-clip, no-layernorm, no-residual,
// no-layernorm-no-residual, lr-x10 and lr-x100 (lr and min-lr scaled together).
const ExperimentSpec& builtin_ablation_variants();

// The variants named in `list` (comma-separated; "control" is always run and may be listed),
// in pool order; every variant of the pool when `list` is empty. nd::Error naming an unknown one.
std::vector<VariantSpec> select_variants(const std::vector<VariantSpec>& pool, const std::string& list);

// Trains what is not finished on every rank of `comm`; rank 0 writes the report. The variants
// are the --experiment file's sections, else the built-in ones, filtered by --variants. Step
// records are logged every step unless --log-interval is set (the gradient-norm statistics
// read them). `guard` (nullptr: none) guards every run (run_queue).
QueueOutcome run_ablate(const ExperimentArgs& args, dist::Comm& comm, std::ostream* progress,
                         dist::FaultGuard* guard = nullptr);

}  // namespace nd::experiments
