// Data parallelism over full-size gradients (--zero 0 and 1; Megatron's DDP and distributed
// optimizer). Buckets are contiguous ranges of the flat gradient buffer (the first one small so
// communication starts early); a bucket is reduced (an `_async` collective) from the autograd hook
// of its last gradient on the step's last micro-batch, overlapping the rest of backward, and the
// compute stream waits only in finish_gradient_sync. With f32 main gradients the same hooks first
// add each micro-batch's bf16 gradients into them, bucket by bucket.
// ZeRO 0 all-reduces the buckets. ZeRO 1 shards the optimizer: each bucket is cut into dp equal
// aligned slices, rank r owns slice r of every bucket (with one bucket, a contiguous 1/dp of the
// buffer); the bucket is reduce-scattered in place, so the owned slice of the flat gradients holds
// the average, AdamW updates only the owned slices (its m, v and masters are shard-sized), and
// gather_parameters() all-gathers them.
#pragma once
#include <vector>

#include "dist/parallel/data_parallel.h"
#include "dist/parallel/gradient_buckets.h"

namespace nd::dist {

class DistributedDataParallel final : public DataParallelEngine {
 public:
  // `flat` built with full-size gradients, and (ZeRO 1) for comm.size() shards.
  DistributedDataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options = {});

  void broadcast_parameters() override;
  void prepare_backward(bool first, bool last) override;
  void finish_gradient_sync() override;
  void gather_parameters() override;

  const std::vector<ShardSlice>& owned() const override { return owned_; }
  int64_t shard_numel() const override { return shard_numel_; }
  size_t bucket_count() const override { return buckets_.size(); }

 private:
  struct Bucket : BucketRange {
    explicit Bucket(const BucketRange& range) : BucketRange(range) {}
    CommWork work;
  };

  void complete(size_t bucket);
  void accumulate_entries(const Bucket& bucket);

  Comm& comm_;
  FlatParams& flat_;
  const bool sharded_;  // ZeRO 1
  std::vector<Bucket> buckets_;
  std::vector<ShardSlice> owned_;  // ZeRO 1
  int64_t shard_numel_ = 0;
  BucketHooks hooks_;
  std::vector<char> entry_done_;  // entry accumulated for this micro-batch
  bool last_ = true;
};

}  // namespace nd::dist
