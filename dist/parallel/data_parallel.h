// The data-parallel engine: owns how the gradients of a model's flat buffers (dist/parallel/flat_params.h)
// become the same on every rank of the data-parallel group. Buckets are contiguous ranges of the
// flat gradient buffer (the first one small so communication starts early); a bucket is reduced
// (an `_async` collective, dist/comm/comm.h) from the autograd hook of its last gradient, overlapping
// the rest of backward, and the compute stream waits only in finish_gradient_sync. With f32 main
// gradients the same hooks first add each micro-batch's bf16 gradients into them, bucket by
// bucket. The engine sees parameters, not a Module, and the group it is handed.
// Modes (--zero): 0 all-reduces the buckets (DDP). 1 and 2 (ZeRO) shard the optimizer: each bucket
// is a range of the flat buffers cut into dp equal aligned slices, rank r owns slice r of every
// bucket (Megatron's distributed optimizer; with one bucket, a contiguous 1/dp of the buffer); AdamW
// updates only the owned slices (its m, v and masters are shard-sized) and gather_parameters()
// all-gathers them. 1 reduce-scatters each bucket in place once per step (after the last
// micro-batch; the owned slice of the flat gradients holds the average). 2 keeps no full-size
// gradients: its buckets are the flat buffers' segments (one per unit, a transformer block, and the
// rest), a block's gradients are bound to one of two pooled staging buffers when its backward
// starts (dist/parallel/unit_hooks.h, the model calls them), and each micro-batch's bucket is
// reduce-scattered from there into an f32 gradient shard that adds the micro-batches up; the
// parameters outside the blocks (embeddings, final LayerNorm) keep staging buffers of their own.
// 3 (FSDP) also shards the parameters: a rank keeps only its slices of them (param_shard(), which
// AdamW updates); a block's parameters are all-gathered into one of three pooled full-size buffers
// (PeerMemory::shared_tensor: peers copy their slices straight into them) just before its forward,
// prefetching the next two blocks' on the communicator's stream meanwhile, and again before its
// backward, prefetching the previous two blocks' (the second of each where a buffer is free: a
// gather launched a block earlier has two blocks' compute to hide behind, and in backward it is
// queued before the reduce-scatter of the block in between, whose sum is slow beside the GEMMs);
// the buffer is free for another block after the forward, and after the backward once the block's
// gradients are reduce-scattered as in 2. The parameters outside the blocks stay whole all step
// (all-gathered from the shard after each update, like ZeRO 1's). A gathered parameter wholly
// inside this rank's slice reads the shard in place, so the gather leaves this rank's block alone
// (PeerMemory::all_gather_others_async) but for the pieces of the parameters that cross the slice's
// edges, which the compute stream copies: a copy within the GPU is an SM kernel, which on the
// comm's stream waits for the GEMMs beside it and slows them (in place, the 6.7B GPT's step is
// 1.5% faster captured, 3.7% eager: docs/PERFORMANCE.md).
#pragma once
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "dist/parallel/flat_params.h"
#include "dist/parallel/unit_hooks.h"

namespace nd::dist {

struct DataParallelOptions {
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  int zero = 0;  // 0, 1, 2 or 3 (see above)
};

class DataParallel : public UnitHooks {
 public:
  // `comm` (the grid's data-parallel group, native or ring; one rank: nothing is communicated) and `flat` on the
  // same device; both must outlive the engine, which hooks every parameter of `flat`. ZeRO 2 needs `flat` built
  // for dp shards without full-size gradients (FlatOptions), with units for the blocks (without, every
  // parameter keeps a staging buffer: correct, no memory saved).
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
  // ZeRO 3: only the parameters outside the blocks; the blocks' are gathered when used.
  void gather_parameters();
  // ZeRO 3: this rank's slices of the parameters (shard_numel(), the parameters' dtype), what AdamW
  // updates (AdamWShard::params); undefined below stage 3.
  Tensor& param_shard() { return param_shard_; }
  // ZeRO 3: makes unit `unit`'s parameters readable through their Variables (a gather, waited for
  // on the GPU by compute-stream order) until another unit takes its buffer: for reading them
  // outside a step (hashes, tests). A no-op below stage 3 and for -1 (always whole).
  void gather_for_read(int unit);
  // Bytes of the engine's own buffers: the gradient shard and (ZeRO 3) the parameter shard, both
  // per parameter (train/memory_plan.h), plus staging_bytes().
  int64_t buffer_bytes() const;
  // A fixed amount, not per parameter: ZeRO 2's staging buffers (two blocks' gradients and those
  // of the parameters outside the blocks, with their landing places unless the comm accumulates
  // into the shard: accumulates_in_shard()); ZeRO 3 adds three blocks'
  // gathered parameters and the parameters outside the blocks.
  int64_t staging_bytes() const;

  // UnitHooks: ZeRO 2 binds a unit's gradients to a pooled staging buffer when its backward starts;
  // ZeRO 3 also gathers its parameters before its forward and backward and prefetches the next.
  void before_forward(int unit) override;
  void after_forward(int unit) override;
  void before_backward(int unit) override;

  // Before each backward of a step: `first` on the first micro-batch, `last` on the one whose
  // gradients are then reduced (the others only accumulate locally).
  void prepare_backward(bool first, bool last);

  // After the last backward: completes the buckets whose gradients never all became final
  // (unused parameters count as zero) and waits until every gradient holds the average over the
  // group (GPU: ordered before later compute-stream work; the host does not wait).
  void finish_gradient_sync();

  size_t bucket_count() const { return buckets_.size(); }
  // ZeRO 2 and 3: whether micro-batches after the first are reduce-scattered straight into the f32
  // shard (PeerMemory::reduce_scatter_accumulates), with no landing places.
  bool accumulates_in_shard() const { return accumulate_; }

 private:
  struct Bucket {
    size_t first = 0, last = 0;  // entries [first, last) of the layout that overlap the bucket
    int64_t begin = 0, length = 0;  // elements of the flat buffers
    int64_t local = 0;              // ZeRO: where this rank's slice sits in the shard
    int unit = -1;                  // ZeRO 2: the segment's unit (-1: outside the blocks)
    int staging = -1;               // ZeRO 2: the staging buffer its gradients are bound to (-1: none)
    int gathered = -1;              // ZeRO 3: the gathered buffer holding its parameters (-1: none)
    Tensor whole;                   // ZeRO 3, outside the blocks: its parameters, always whole
    int pending = 0;
    bool completed = false;      // its gradients are final for this micro-batch
    CommWork work;
  };

  // A full-size gradient buffer of ZeRO 2 that backward writes a bucket's gradients into, in the
  // parameters' dtype (plus an f32 copy under f32 main gradients, what is reduced, unless the comm
  // reduce-scatters bf16 into f32 itself: widen_).
  // The reduce-scatter's result lands beside it (1/dp of it, in the gradient dtype) when it cannot
  // go to the f32 shard directly, and is added into the shard when the buffer is next bound or at
  // the drain, by which time the compute stream waits for that reduce-scatter anyway. Where the
  // comm adds later micro-batches into the shard itself (accumulate_), there is no landing place.
  struct Staging {
    Tensor grads, reduce, landing;
    CommWork work;    // the reduce-scatter that last read it
    int layout = -1;  // the bucket whose entry layout its padding is zero for
    int pending = -1;  // the bucket whose reduce-scatter sits in `landing`, still to be added
    bool overwrite = false;  // ... into a shard slice that holds no micro-batch yet
  };

  void plan_entry_buckets();
  void plan_sharded_buckets();
  void plan_unit_buckets();
  // ZeRO 3: a full-size buffer a block's parameters are gathered into; pinned from the gather
  // until its forward ends or its gradients are reduce-scattered, so nothing else takes it.
  struct Gathered {
    Tensor params;
    CommWork work;  // the all-gather that filled it, not yet waited for
    int bucket = -1;
    bool pinned = false;
    uint64_t used = 0;  // for taking the least recently used
  };

  // What a staging buffer's reduce-scatter reads: f32 under f32 main gradients (unless the comm
  // widens), else the parameters' dtype.
  DType reduced_dtype() const;
  // Whether the first micro-batch's reduce-scatter writes the f32 shard directly.
  bool first_into_shard() const;
  CommWork scatter_into_shard(Bucket& bucket, Staging& staging, const Tensor& input);
  void bind(Bucket& bucket, int staging);
  void flush(Staging& staging);
  void complete_staged(Bucket& bucket);
  int bucket_of_unit(int unit) const;
  void shard_parameters();
  // The bucket's parameters become views of `values` (its elements from its start); with
  // `in_shard` (a gathered block), those wholly inside this rank's slice read the shard in place.
  void bind_params(Bucket& bucket, const Tensor& values, bool in_shard = false);
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
  bool shard_filled_ = false;  // shard_grads_ holds a micro-batch of this step
  // ZeRO 2
  std::vector<Staging> staging_;  // [0, kPooled) pooled for the blocks, then one per other bucket
  std::vector<int> bucket_of_unit_;  // unit -> bucket (-1: none)
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
  // Gathered buffers shared with the comm and this rank's slice read in place (the default;
  // NANODIST_ZERO3_IN_PLACE=0 gathers whole blocks into plain buffers, to measure the gain).
  bool in_place_ = true;
  // A second prefetched gather, forward and backward (the default; NANODIST_ZERO3_PREFETCH=1
  // prefetches one block).
  bool second_prefetch_ = true;
};

}  // namespace nd::dist
