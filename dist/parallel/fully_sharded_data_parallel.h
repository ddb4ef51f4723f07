// Fully sharded data parallelism (--zero 2 and 3; FSDP). No full-size gradients: the buckets are the
// flat buffers' segments (one per unit, a transformer block, and the rest), each cut into dp equal
// aligned slices of which rank r owns slice r. A block's gradients are bound to one of two pooled
// staging buffers when its backward starts (the model calls the UnitHooks, dist/parallel/unit_hooks.h),
// and each micro-batch's bucket is reduce-scattered from there into an f32 gradient shard that adds
// the micro-batches up; the parameters outside the blocks (embeddings, final LayerNorm) keep staging
// buffers of their own. AdamW updates the owned slices. With DataParallelOptions::hold_units (a
// zero-bubble pipeline) every block keeps a staging buffer of its own too, and the buckets are
// reduce-scattered between micro-batches and at the finish, after the deferred weight gradients.
// ZeRO 2 keeps the parameters whole (the updated slices all-gathered after the update). ZeRO 3
// shards them too: a rank keeps only its slices (param_shard(), which AdamW updates); a block's
// parameters are all-gathered into one of three pooled full-size buffers (shared with the comm:
// peers copy their slices straight into them) just before its forward, prefetching the next two
// blocks' on the communicator's stream meanwhile, and again before its backward, prefetching the
// previous two blocks' (the second of each where a buffer is free: a gather launched a block earlier
// has two blocks' compute to hide behind, and in backward it is queued before the reduce-scatter of
// the block in between, whose sum is slow beside the GEMMs). The buffer is free for another block
// after the forward, and after the backward once the block's gradients are reduce-scattered. The
// parameters outside the blocks stay whole all step (all-gathered from the shard after each
// update). A gathered parameter wholly inside this rank's slice reads the shard in place, so the
// gather leaves this rank's block alone but for the pieces of the parameters that cross the slice's
// edges, which the compute stream copies: a copy within the GPU is an SM kernel, which on the comm's
// stream would wait for the GEMMs beside it and slow them.
#pragma once
#include <vector>

#include "dist/parallel/data_parallel.h"
#include "dist/parallel/gradient_buckets.h"

namespace nd::dist {

class FullyShardedDataParallel final : public DataParallelEngine, public UnitHooks {
 public:
  // `flat` built for comm.size() shards without full-size gradients, with units for the blocks
  // (without, every parameter keeps a staging buffer: correct, no memory saved).
  FullyShardedDataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options);

  void broadcast_parameters() override;
  // Every micro-batch's gradients are reduce-scattered into the shard: `last` changes nothing. With
  // hold_units the previous micro-batch's are, here.
  void prepare_backward(bool first, bool last) override;
  void finish_gradient_sync() override;
  // ZeRO 3: only the parameters outside the blocks; the blocks' are gathered when used.
  void gather_parameters() override;

  // Binds a unit's gradients to a pooled staging buffer when its backward starts; ZeRO 3 also
  // gathers its parameters before its forward and backward and prefetches the next.
  UnitHooks* unit_hooks() override { return this; }
  void before_forward(int unit) override;
  void after_forward(int unit) override;
  void before_backward(int unit) override;
  // ZeRO 3: a gather, waited for on the GPU by compute-stream order, until another unit takes its
  // buffer.
  void gather_for_read(int unit) override;

  const std::vector<ShardSlice>& owned() const override { return owned_; }
  int64_t shard_numel() const override { return shard_numel_; }
  Tensor shard_grads() const override { return shard_grads_; }
  Tensor param_shard() const override { return param_shard_; }  // ZeRO 3
  int64_t buffer_bytes() const override;
  // Two blocks' staging buffers and those of the parameters outside the blocks, with their landing
  // places unless the comm accumulates into the shard (accumulates_in_shard()); ZeRO 3 adds three
  // blocks' gathered parameters and the parameters outside the blocks.
  int64_t staging_bytes() const override;
  size_t bucket_count() const override { return buckets_.size(); }
  // Whether micro-batches after the first are reduce-scattered straight into the f32 shard
  // (PeerMemory::reduce_scatter_accumulates), with no landing places.
  bool accumulates_in_shard() const { return accumulate_; }

 private:
  struct Bucket : BucketRange {
    explicit Bucket(const BucketRange& range) : BucketRange(range) {}
    CommWork work;
    int staging = -1;   // the staging buffer its gradients are bound to (-1: none)
    int gathered = -1;  // ZeRO 3: the gathered buffer holding its parameters (-1: none)
    Tensor whole;       // ZeRO 3, outside the blocks: its parameters, always whole
  };

  // A full-size gradient buffer that backward writes a bucket's gradients into, in the parameters'
  // dtype (plus an f32 copy under f32 main gradients, what is reduced, unless the comm
  // reduce-scatters bf16 into f32 itself: widen_). The reduce-scatter's result lands beside it (1/dp
  // of it, in the gradient dtype) when it cannot go to the f32 shard directly, and is added into
  // the shard when the buffer is next bound or at the drain, by which time the compute stream waits
  // for that reduce-scatter anyway. Where the comm adds later micro-batches into the shard itself
  // (accumulate_), there is no landing place.
  struct Staging {
    Tensor grads, reduce, landing;
    CommWork work;     // the reduce-scatter that last read it
    int layout = -1;   // the bucket whose entry layout its padding is zero for
    int pending = -1;  // the bucket whose reduce-scatter sits in `landing`, still to be added
    bool overwrite = false;  // ... into a shard slice that holds no micro-batch yet
  };

  // ZeRO 3: a full-size buffer a block's parameters are gathered into; pinned from the gather
  // until its forward ends or its gradients are reduce-scattered, so nothing else takes it.
  struct Gathered {
    Tensor params;
    CommWork work;  // the all-gather that filled it, not yet waited for
    int bucket = -1;
    bool pinned = false;
    uint64_t used = 0;  // for taking the least recently used
  };

  // Gradients (fully_sharded_data_parallel.cpp).
  void make_staging(int64_t length);
  // What a staging buffer's reduce-scatter reads: f32 under f32 main gradients (unless the comm
  // widens), else the parameters' dtype.
  DType reduced_dtype() const;
  // Whether the first micro-batch's reduce-scatter writes the f32 shard directly.
  bool first_into_shard() const;
  int bucket_of_unit(int unit) const;
  void bind(Bucket& bucket, int staging);
  void bind_next_pooled(Bucket& bucket);
  void flush(Staging& staging);
  // The gradient hooks' call: reduce, or with hold_units only note that gradients came.
  void complete(size_t bucket);
  void reduce(size_t bucket);
  // The buckets not reduced yet this micro-batch (with hold_units: all, if any gradient came).
  void reduce_remaining();
  CommWork scatter_into_shard(Bucket& bucket, Staging& staging, const Tensor& input);
  void drain_into_shard();

  // ZeRO 3's parameters (fully_sharded_params.cpp).
  void shard_parameters(int64_t pooled_length);
  // The bucket's parameters become views of `values` (its elements from its start); with
  // `in_shard` (a gathered block), those wholly inside this rank's slice read the shard in place.
  void bind_params(Bucket& bucket, const Tensor& values, bool in_shard);
  bool reads_shard(size_t bucket, size_t entry) const;
  // Copies into `whole` the pieces of this rank's slice that a parameter crossing its edges reads
  // there, in compute-stream order.
  void copy_edge_pieces(size_t bucket, Tensor& whole);
  // `required` false (a deeper prefetch): only into a buffer free now; none free, nothing.
  void launch_gather(size_t bucket, bool required = true);
  void use_gathered(size_t bucket, bool pin);
  void unpin(size_t bucket);
  void forget_gathered();
  void gather_resident();
  void broadcast_sharded();

  Comm& comm_;
  FlatParams& flat_;
  const bool shard_params_;  // ZeRO 3
  const bool hold_;          // DataParallelOptions::hold_units
  bool held_ = false;        // hold_: gradients came since the last reduction
  std::vector<Bucket> buckets_;
  std::vector<ShardSlice> owned_;
  int64_t shard_numel_ = 0;
  BucketHooks hooks_;
  std::vector<int> bucket_of_unit_;  // unit -> bucket (-1: none)
  // Gradients
  Tensor shard_grads_;         // f32, shard_numel_
  bool shard_filled_ = false;  // shard_grads_ holds a micro-batch of this step
  std::vector<Staging> staging_;  // [0, kPooled) pooled for the blocks, then one per other bucket
  int next_pooled_ = 0;
  bool widen_ = false;  // bf16 staging reduce-scattered straight into f32 (PeerMemory::reduce_scatter_widens)
  // Later micro-batches reduce-scattered straight into the shard, added by the comm
  // (PeerMemory::reduce_scatter_accumulates): no landing places.
  bool accumulate_ = false;
  // ZeRO 3
  Tensor param_shard_;
  std::vector<Gathered> gathered_;
  int first_unit_ = -1;  // a forward starting here forgets what is gathered (the update changed it)
  uint64_t clock_ = 0;
};

}  // namespace nd::dist
