// DistributedDataParallel: a bucket is complete when its last gradient is final (gradient_buckets.h);
// on the step's last micro-batch it is then all-reduced (ZeRO 0) or reduce-scattered in place (ZeRO
// 1), and ZeRO 1's updated slices are all-gathered after the optimizer.
#include "dist/parallel/distributed_data_parallel.h"

#include <algorithm>

namespace nd::dist {

DistributedDataParallel::DistributedDataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options)
    : comm_(comm), flat_(flat), sharded_(options.zero == 1), entry_done_(flat.entries().size(), 0) {
  check_data_parallel(comm, flat, options);
  ND_CHECK(options.zero <= 1, "DistributedDataParallel runs ZeRO 0 and 1, not " << options.zero);
  const std::vector<BucketRange> plan =
      sharded_ ? sharded_buckets(flat, comm.size(), options) : entry_buckets(flat, options);
  for (const BucketRange& range : plan) buckets_.emplace_back(range);
  if (sharded_) {
    owned_ = owned_slices(plan, comm.rank(), comm.size());
    shard_numel_ = flat.numel() / comm.size();
  }
  hooks_.install(flat, plan, [this](size_t bucket) { complete(bucket); });
}

void DistributedDataParallel::broadcast_parameters() {
  if (comm_.size() > 1) comm_.broadcast(flat_.params(), 0);
}

void DistributedDataParallel::prepare_backward(bool /*first*/, bool last) {
  // A bucket left incomplete by the previous micro-batch (an unused parameter) keeps its
  // gradients in backward's buffers, which the next backward adds to: nothing is lost.
  last_ = last;
  hooks_.start();
  for (Bucket& b : buckets_) b.work = CommWork();
  std::fill(entry_done_.begin(), entry_done_.end(), 0);
}

// Moves the bucket's entries not yet moved this micro-batch into grads() (separate grads) or fills
// the missing ones with zeros, in runs that share the overwrite decision.
void DistributedDataParallel::accumulate_entries(const Bucket& bucket) {
  size_t k = bucket.first;
  while (k < bucket.last) {
    if (entry_done_[k]) {
      ++k;
      continue;
    }
    const bool overwrite = !flat_.has_gradient(k);
    size_t end = k + 1;
    while (end < bucket.last && !entry_done_[end] &&
           (!flat_.separate_grads() || flat_.has_gradient(end) != overwrite))
      ++end;
    flat_.accumulate(k, end, overwrite);
    std::fill(entry_done_.begin() + static_cast<std::ptrdiff_t>(k), entry_done_.begin() + static_cast<std::ptrdiff_t>(end), 1);
    k = end;
  }
}

void DistributedDataParallel::complete(size_t index) {
  Bucket& bucket = buckets_[index];
  if (!flat_.separate_grads() && !last_) return;  // gradients accumulate in place
  accumulate_entries(bucket);
  if (!last_ || comm_.size() == 1) return;  // one rank: the bucket is its own average, in place
  Tensor range = flat_.grads().narrow(bucket.begin, bucket.length);
  if (sharded_) {  // this rank's slice of the bucket's average, in place
    Tensor mine = flat_.grads().narrow(owned_[index].begin, owned_[index].length);
    bucket.work = comm_.reduce_scatter_async(range, mine, ReduceOp::Avg);
  } else {
    bucket.work = comm_.allreduce_async(range, ReduceOp::Avg);
  }
}

void DistributedDataParallel::finish_gradient_sync() {
  hooks_.complete_all();
  for (Bucket& b : buckets_) b.work.wait();
}

void DistributedDataParallel::gather_parameters() {
  if (sharded_) all_gather_owned(comm_, flat_.params(), owned_);
}

}  // namespace nd::dist
