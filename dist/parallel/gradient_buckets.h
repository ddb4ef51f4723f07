// What the data-parallel engines share: how the flat buffers are cut into buckets, the autograd
// hooks that count a bucket's gradients until all are final (then the engine reduces it, overlapping
// the rest of backward), and the all-gather of the owned slices after a sharded update.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "dist/comm/comm.h"
#include "dist/parallel/data_parallel.h"
#include "dist/parallel/flat_params.h"

namespace nd::dist {

// A contiguous range of the flat buffers and the layout entries that overlap it.
struct BucketRange {
  size_t first = 0, last = 0;     // entries [first, last) of the layout
  int64_t begin = 0, length = 0;  // elements of the flat buffers
  int64_t local = 0;              // sharded: where this rank's slice of it sits in the shard
  int unit = -1;                  // per unit: the segment's unit (-1: outside the blocks)
};

// The checks every engine makes of its arguments (sizes, stage, device, the flat buffers' kind).
void check_data_parallel(const Comm& comm, const FlatParams& flat, const DataParallelOptions& options);

// Buckets at tensor boundaries, the first up to first_bucket_mb (communication starts early), then
// bucket_mb, the last reaching the buffer's end (DDP).
std::vector<BucketRange> entry_buckets(const FlatParams& flat, const DataParallelOptions& options);
// Buckets of a whole number of (shards x alignment) elements sized the same way, cut wherever that
// falls (a tensor may span two buckets), so each splits into `shards` equal aligned slices (ZeRO 1).
// Only the runs of unit -1 are cut so; a segment of another unit (dist::FlatOptions::units: the
// pipeline's tied embedding) is one bucket, which every layout holding that segment cuts alike.
std::vector<BucketRange> sharded_buckets(const FlatParams& flat, int shards, const DataParallelOptions& options);
// One bucket per segment of the layout (a unit, or a run outside the units), each padded by
// FlatParams to shards x the alignment (ZeRO 2 and 3).
std::vector<BucketRange> unit_buckets(const FlatParams& flat, int shards);
// Slice `rank` of every bucket cut into `shards`, stored at the bucket's `local`.
std::vector<ShardSlice> owned_slices(const std::vector<BucketRange>& buckets, int rank, int shards);

// Counts each bucket's gradients as backward makes them final and completes the bucket (calls the
// engine's `complete` with its index) once per micro-batch, when the last one arrives or when
// complete_all() reaches it.
class BucketHooks {
 public:
  BucketHooks() = default;
  BucketHooks(const BucketHooks&) = delete;
  BucketHooks& operator=(const BucketHooks&) = delete;

  // Hooks every parameter of `flat`; `this` must stay where it is while they live.
  void install(FlatParams& flat, const std::vector<BucketRange>& buckets, std::function<void(size_t)> complete);
  // A new micro-batch: every bucket waits for all its entries again.
  void start();
  // The buckets not completed yet, in bucket order, which every rank shares: the collectives they
  // launch match up across ranks.
  void complete_all();

 private:
  void on_gradient_final(size_t entry);
  void complete(size_t bucket);

  std::vector<std::pair<size_t, size_t>> buckets_of_;  // entry -> the buckets [first, last) it overlaps
  std::vector<int> entries_, pending_;
  std::vector<char> completed_;
  std::function<void(size_t)> complete_;
};

// After a sharded update, every owned slice of `values` (a flat buffer of the layout) all-gathered
// in place into its bucket (the slice is block rank() of it), waited for in compute-stream order.
void all_gather_owned(Comm& comm, Tensor& values, const std::vector<ShardSlice>& owned);

}  // namespace nd::dist
