// The communication a training step issues, predicted from a GPT shape and a layout (dp, tp with
// or without sequence parallelism, pp, ZeRO stage), and timed with the alpha-beta model
// (dist/comm/bench/comm_model.h): every collective with its group, size, calls per step, whether the
// schedule overlaps it with compute, the model's time (the idle GPU's fit, plus the GEMM in
// flight it waits for where it is issued beside one) and the part the compute stream waits for
// (dist/parallel/plan/comm_overlap.h; GEMMs timed from their FLOPs at a GEMM rate). Behind `nanodist plan`. The dp and tp lists equal what a real step issues (tests/train/comm_plan_mpi_test);
// the pp and ZeRO lists follow the standard schedules (1F1B, Megatron's distributed optimizer, FSDP).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm/bench/comm_model.h"

namespace nd::dist {

struct PlanShape {
  int n_layer = 12, n_head = 12, n_embd = 768, block_size = 1024, vocab_size = 50304;
  bool bias = true;
  bool on_cuda = true;   // the vocabulary's padding (a multiple of 128 x tp on the GPU)
  int batch_size = 8;    // rows per micro-batch of each data-parallel group (the tp ranks share them)
  int grad_accum = 1;    // micro-batches per step
  int tp = 1, dp = 1, pp = 1;
  int zero = 0;          // 0 (all-reduce), 1, 2, 3
  bool sequence_parallel = false;
  bool tp_overlap = true;  // sequence parallelism's collectives split into chunks (--tp-overlap)
  int act_bytes = 2;     // activations (bf16 on the GPU)
  int param_bytes = 2;
  int grad_bytes = 4;    // the gradients data parallelism reduces (--grad-dtype)
  double bucket_mb = 25.0, first_bucket_mb = 1.0;
  // The rate the compute beside a collective runs at: by default that of GPT-2 124M's backward
  // linears on one Hopper GPU, as the op timer measured them (docs/benchmarks/).
  double gemm_tflops = 600.0;
  // Backward after the last block's GEMMs: the first block's ln_1 and the embedding's backward,
  // which no GEMM rate times (by default as traced for GPT-2 124M and GPT-2 large, about the same
  // for both; docs/benchmarks/). The buckets of block 0 are ready this long before the
  // embeddings' gradients.
  double backward_tail_us = 200.0;
  // The kernels between a block's linears that a data-parallel bucket may wait for, in ps per
  // element of the B x T x C activation: the LayerNorm's backward and the residual add's backward,
  // by default from the op timer's GPT-2 124M step on one Hopper GPU (docs/benchmarks/); both are
  // memory-bound, so their time grows with the activation.
  double norm_backward_ps = 4.17;
  double add_backward_ps = 1.36;
};

struct PlannedCall {
  std::string group;  // dp, tp, pp, embedding (first and last stage)
  std::string op;     // bench op: allreduce, reducescatter, allgather, sendrecv
  std::string what;
  int ranks = 0;
  int64_t bytes = 0;  // bench-comm's convention: all-reduce buffer, reduce-scatter input, all-gather output
  int64_t calls = 0;  // per optimizer step
  bool hidden = false;  // overlapped with compute by the schedule
  // The GEMM in flight the call waits for before it runs (us at gemm_tflops); kBesideAll where
  // the schedule hides it whole (other stages' compute, prefetches). Data-parallel buckets: the
  // backward kernel after the one that readied them (0 in backward's tail).
  double beside_us = 0;
  double time_us = -1;     // per call from the model (that wait included); -1 without a fit for (op, impl)
  double exposed_us = -1;  // per call: the part the compute stream waits for
};
constexpr double kBesideAll = 1e300;

struct StepPlan {
  std::vector<PlannedCall> calls;
  double total_us = 0;    // every call's time
  double exposed_us = 0;  // every call's exposed part
  std::vector<std::string> missing;  // (op impl) pairs the table lacks
  double backward_us = 0;  // one micro-batch's backward GEMMs at gemm_tflops (what dp buckets hide behind)
};

// Elements of each entry of the flat parameter buffer in its layout order (reverse registration
// order: ln_f, the blocks from the last, wpe, wte), each shard's size at this tp, and the padded
// total (dist/parallel/flat_params.h: every entry at a kFlatAlignBytes (a page) boundary).
std::vector<int64_t> flat_entry_sizes(const PlanShape& shape);
int64_t flat_numel(const PlanShape& shape);
// The data-parallel buckets' lengths in elements (dist/parallel/gradient_buckets.h's entry_buckets:
// the first up to first_bucket_mb, then bucket_mb, in layout order, the last to the buffer's end).
std::vector<int64_t> bucket_lengths(const PlanShape& shape);

// For each bucket of bucket_lengths, the index (in flat_entry_sizes) of its last entry.
std::vector<size_t> bucket_last_entries(const PlanShape& shape);

// Raises on shapes that do not split (heads or vocabulary by tp, batch by tp with sequence
// parallelism, layers by pp). `impl` names the table's implementation (native, ring, ...).
StepPlan plan_step(const PlanShape& shape, const std::vector<AlphaBetaFit>& table, const std::string& impl);

// A default table for 2 GPUs over NVLink from the figures in docs/PERFORMANCE.md and
// docs/bandwidth/ (native and ring; all-reduce, reduce-scatter, all-gather, sendrecv).
std::vector<AlphaBetaFit> default_fit_table();

}  // namespace nd::dist
