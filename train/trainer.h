// The training loop of `nanodist train`: data loaders over DIR/train.bin and DIR/val.bin, the GPT,
// gradient accumulation, AdamW with warmup + cosine schedule and clipping, evals, step lines on
// rank 0, OUT/metrics.jsonl, HDF5 checkpoints and exact resume. A library, so tests drive it
// in-process; data parallelism comes from the communicator in RunContext.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <vector>

#include "autograd/variable.h"
#include "dist/comm/comm.h"
#include "tensor/op_timer.h"
#include "train/config.h"

namespace nd::dist {
class FaultGuard;
}

namespace nd::train {

// Where this process stands in a run, and the hooks a data-parallel run fills in. The defaults
// are one rank and no communication.
struct RunContext {
  // The world communicator; nullptr or one rank = single-process training. With more ranks the
  // trainer runs data parallel (DDP) over it: rank and world size come from it.
  dist::Comm* comm = nullptr;
  std::ostream* log = nullptr;  // step and eval lines (rank 0 only); nullptr = silent
  // Called once on rank 0 just before the run's first line (at the latest when training starts):
  // the CLI prints its header there, so that an input error found while setting up (the data,
  // --out, a checkpoint to resume) is printed alone.
  std::function<void()> before_first_line;
  // The device's peak FLOP/s for MFU; 0 = unknown (the step line shows GFLOP/s instead).
  double peak_flops = 0.0;
  // The fault guard the run is under (dist/parallel/fault_guard.h): its watchdog times each step, eval,
  // checkpoint and collective outside a step, and it watches the grid's communicators (their
  // asynchronous errors are faults) while the run lives; nullptr = nothing is timed or watched.
  // Every command that trains (train, ablate, sweep) sets it.
  dist::FaultGuard* fault_guard = nullptr;
  // Whether the result carries params_hash and replicated_params_hash (what tests compare runs
  // and ranks by). They copy every parameter to the host and hash it byte by byte, tens of seconds
  // at the end of a multi-billion-parameter run, so the commands that train turn them off.
  bool hash_parameters = true;
  // The copy engines' slot size under --collectives peer or auto (dist::PeerOptions::copy_block_bytes;
  // 0 = its default): tests make it tiny so that small blocks move in many pieces.
  int64_t peer_copy_block_bytes = 0;
};

struct TrainResult {
  int64_t first_step = 0;           // 0, or the step a resumed run started from
  int64_t steps_done = 0;           // total optimizer steps after this run (resumed ones included)
  std::vector<double> step_losses;  // mean micro-batch loss of each step this run took
  double best_val_loss = 0;         // +inf when no eval ran
  double last_val_loss = std::numeric_limits<double>::quiet_NaN();  // NaN when no eval ran
  int64_t params = 0;
  int64_t tokens = 0;               // training tokens over all ranks, resumed ones included
  bool diverged = false;            // stopped on a non-finite loss or gradient norm
  bool stopped_by_signal = false;   // SIGTERM, SIGINT or SIGUSR1: saved, then stopped early
  int64_t skipped_nonfinite = 0;    // updates dropped for a non-finite value (--skip-nonfinite)
  int64_t overflow_skips = 0;       // steps the loss scaler skipped (gradients overflowed), over the run
  double loss_scale = 1.0;          // the loss scale at the end (1 without loss scaling)
  std::string last_checkpoint;
  // FNV-1a over the bytes of every parameter at the end: equal hashes = bit-identical models
  // (data-parallel ranks must agree). 0 unless RunContext::hash_parameters.
  uint64_t params_hash = 0;
  // The same over the parameters that tensor parallelism replicates (LayerNorms, row-parallel
  // biases, wpe): equal on every rank of a tp group.
  uint64_t replicated_params_hash = 0;
  // The most device memory this rank's tensors held at once (caching allocator; blocks at their
  // bucket sizes), and the most they asked for at once (tensor sizes); 0 on the CPU.
  int64_t peak_device_bytes = 0;
  int64_t peak_requested_device_bytes = 0;
  // Steps this run took as replays of a captured CUDA graph (--cuda-graph), and the cudaMalloc
  // calls made during those steps (none expected: the graph's memory is reserved at capture).
  int64_t cuda_graph_replays = 0;
  int64_t replay_cuda_mallocs = 0;
  // With --op-times (tensor/op_timer.h): the op times summed over the timed steps
  // (every step after the first two), how many, and their summed wall time.
  std::vector<op_timer::Row> op_times;
  int64_t op_timed_steps = 0;
  double op_timed_ms = 0.0;
};

// Runs training as configured; nd::Error on bad input (missing or malformed data, a checkpoint
// of another model, an unwritable --out, ...).
TrainResult run_training(const TrainConfig& config, const RunContext& context = RunContext{});

}  // namespace nd::train
