// The data-parallel engine: makes the gradients of a model's flat buffers (dist/parallel/flat_params.h)
// the group's average, and after the optimizer's update every rank's parameters whole again. What
// the schedules, finalize_grads, the optimizer and checkpointing call; two engines implement it,
// chosen by the ZeRO stage (--zero):
//   0, 1: DistributedDataParallel (dist/parallel/distributed_data_parallel.h): all-reduced buckets,
//         or (1) a sharded optimizer over reduce-scattered ones;
//   2, 3: FullyShardedDataParallel (dist/parallel/fully_sharded_data_parallel.h): per-block gradient
//         staging reduce-scattered into an f32 shard, and (3) the parameters sharded too.
// An engine sees parameters, not a Module, and the group it is handed. Every call is ordered against
// compute by the Comm (dist/comm/comm.h): on the GPU the host does not wait.
#pragma once
#include <memory>
#include <vector>

#include "dist/comm/comm.h"
#include "dist/parallel/flat_params.h"
#include "dist/parallel/unit_hooks.h"

namespace nd::dist {

struct DataParallelOptions {
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  int zero = 0;  // 0, 1, 2 or 3 (see above)
  // ZeRO 2 and 3: every unit keeps a staging buffer of its own (the gradients full-size, in the
  // parameters' dtype), reduce-scattered when the next micro-batch's backward starts and at the
  // finish rather than from the gradient hooks: for a schedule whose backward writes a unit's weight
  // gradients after its hooks fired (zero-bubble's deferred weight products).
  bool hold_units = false;
};

class DataParallelEngine {
 public:
  virtual ~DataParallelEngine() = default;

  // Copies the parameters of the group's rank 0 to its other ranks.
  virtual void broadcast_parameters() = 0;
  // Before each backward of a step: `first` on the first micro-batch, `last` on the one whose
  // gradients are then reduced (an engine may reduce every micro-batch's).
  virtual void prepare_backward(bool first, bool last) = 0;
  // After the last backward: completes the buckets whose gradients never all became final (unused
  // parameters count as zero) and leaves the group's average where the optimizer reads it.
  virtual void finish_gradient_sync() = 0;
  // After the optimizer updated the owned slices: every rank's slices to every rank (a no-op where
  // nothing is sharded).
  virtual void gather_parameters() = 0;

  // The calls the model makes around each unit (a transformer block), or null where the engine
  // needs none (the model then makes none).
  virtual UnitHooks* unit_hooks() { return nullptr; }
  // Makes unit `unit`'s parameters readable through their Variables, for reading them outside a
  // step (hashes, tests); a no-op where they are always whole, and for -1 (outside the units).
  virtual void gather_for_read(int /*unit*/) {}

  // The optimizer's shard (train/optimizer.h AdamWShard): the slices of the flat buffers this rank
  // owns, in layout order (empty: nothing sharded), and how many elements they hold.
  virtual const std::vector<ShardSlice>& owned() const = 0;
  virtual int64_t shard_numel() const = 0;
  // An f32 gradient shard (shard_numel()) holding the average after finish_gradient_sync;
  // undefined: the owned slices of the flat gradients hold it.
  virtual Tensor shard_grads() const { return Tensor(); }
  // The owned parameters (shard_numel(), the parameters' dtype) that the update writes; undefined:
  // the flat parameters.
  virtual Tensor param_shard() const { return Tensor(); }

  // Bytes of the engine's own buffers: the per-parameter shards (train/memory_plan.h) plus
  // staging_bytes().
  virtual int64_t buffer_bytes() const { return staging_bytes(); }
  // A fixed amount, not per parameter: the per-unit buffers (gradient staging, gathered parameters).
  virtual int64_t staging_bytes() const { return 0; }
  virtual size_t bucket_count() const = 0;
};

// Flat entry `e`'s gradient as this rank holds it once finish_gradient_sync has made it the group's
// average: 1-D views of the pieces of the tensor it owns (ZeRO 1: in the flat gradients; 2 and 3: in
// the gradient shard), in the tensor's element order, or of the whole tensor where nothing is
// sharded. What a later sum over other ranks reads (finalize_grads): ranks whose layouts cut `e`
// alike (the same segment, the same dp rank) hold the same pieces.
std::vector<Tensor> held_gradient(const DataParallelEngine& engine, FlatParams& flat, const FlatEntry& e);

// The engine of `options.zero` over `comm` (the grid's data-parallel group, native or ring; one
// rank: nothing is communicated) and `flat` (built for that stage: train/zero_layout.h), on the same
// device; both must outlive the engine, which hooks every parameter of `flat`.
std::unique_ptr<DataParallelEngine> make_data_parallel(Comm& comm, FlatParams& flat,
                                                       const DataParallelOptions& options = {});

}  // namespace nd::dist
