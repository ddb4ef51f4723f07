// The data-parallel engine: owns how the gradients of a model's flat buffers (dist/flat_params.h)
// become the same on every rank of the data-parallel group. Buckets are contiguous ranges of the
// flat gradient buffer (the first one small so communication starts early); a bucket is reduced
// (an `_async` collective, dist/comm.h) from the autograd hook of its last gradient, overlapping
// the rest of backward, and the compute stream waits only in finish_gradient_sync. With f32 main
// gradients the same hooks first add each micro-batch's bf16 gradients into them, bucket by
// bucket. The engine sees parameters, not a Module, and the group it is handed.
// Modes (--zero): 0 all-reduces the buckets (DDP). 1 and 2 (ZeRO) shard the optimizer: each bucket
// is a range of the flat buffers cut into dp equal aligned slices, rank r owns slice r of every
// bucket (Megatron's distributed optimizer; with one bucket, a contiguous 1/dp of the buffer); AdamW
// updates only the owned slices (its m, v and masters are shard-sized) and gather_parameters()
// all-gathers them. 1 reduce-scatters each bucket in place once per step (after the last
// micro-batch; the owned slice of the flat gradients holds the average), 2 after every micro-batch
// into an f32 gradient shard that adds the micro-batches up. The full-size gradient buffers stay
// (backward writes into views of them), so 2 saves no memory over 1 here: it moves the reduction
// into every micro-batch, the step ZeRO-3 builds on.
#pragma once
#include <string>
#include <vector>

#include "dist/comm.h"
#include "dist/flat_params.h"

namespace nd::dist {

struct DataParallelOptions {
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  int zero = 0;  // 0, 1 or 2 (see above)
};

class DataParallel {
 public:
  // `comm` (the grid's data-parallel group, native or ring; one rank: nothing is communicated) and `flat` on the
  // same device; both must outlive the engine, which hooks every parameter of `flat`.
  DataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options = {});
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Copies the parameters of the group's rank 0 to its other ranks (one broadcast).
  void broadcast_parameters();

  int zero() const { return options_.zero; }
  // ZeRO (zero() >= 1): the slices this rank owns, in layout order, and (ZeRO 2) the f32 gradient
  // shard (shard_numel() elements) that finish_gradient_sync leaves the group's average in; ZeRO 1
  // leaves it in the owned slices of the flat gradients, and shard_grads() is undefined.
  const std::vector<ShardSlice>& owned() const { return owned_; }
  int64_t shard_numel() const { return shard_numel_; }
  Tensor& shard_grads() { return shard_grads_; }
  // ZeRO: after the optimizer updated the owned slices, all-gathers every bucket in place so all
  // ranks hold all parameters (GPU: ordered before later compute work; the host does not wait).
  void gather_parameters();
  // Bytes of the engine's own buffers (the gradient shard and its staging).
  int64_t buffer_bytes() const;

  // Before each backward of a step: `first` on the first micro-batch, `last` on the one whose
  // gradients are then reduced (the others only accumulate locally).
  void prepare_backward(bool first, bool last);

  // After the last backward: completes the buckets whose gradients never all became final
  // (unused parameters count as zero) and waits until every gradient holds the average over the
  // group (GPU: ordered before later compute-stream work; the host does not wait).
  void finish_gradient_sync();

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t first = 0, last = 0;  // entries [first, last) of the layout that overlap the bucket
    int64_t begin = 0, length = 0;  // elements of the flat buffers
    int64_t local = 0;              // ZeRO: where this rank's slice sits in the shard
    int pending = 0;
    bool completed = false;      // its gradients are final for this micro-batch
    CommWork work;
  };

  void plan_entry_buckets();
  void plan_sharded_buckets();
  void on_gradient_final(size_t entry);
  void complete(Bucket& bucket);
  void accumulate_entries(const Bucket& bucket);
  void reduce_scatter(Bucket& bucket);
  void drain_into_shard();

  Comm& comm_;
  FlatParams& flat_;
  DataParallelOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> buckets_of_;  // entry -> the buckets [first, last) it overlaps
  std::vector<char> entry_done_;  // entry accumulated for this micro-batch
  bool last_ = true;
  // ZeRO
  std::vector<ShardSlice> owned_;
  int64_t shard_numel_ = 0;
  Tensor shard_grads_;    // f32, shard_numel_
  Tensor incoming_;       // the reduce-scatters' output when it cannot go to shard_grads_ directly
  bool shard_filled_ = false;  // shard_grads_ holds a micro-batch of this step
  bool incoming_pending_ = false;  // incoming_ holds reduce-scatters still to add into the shard
};

}  // namespace nd::dist
