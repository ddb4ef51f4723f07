// DataParallel: bucket layout over the flat buffers, the hooks that complete and launch buckets,
// and the final wait. Ordering against compute is the Comm's business (dist/comm.h).
#include "dist/data_parallel.h"

namespace nd::dist {

DataParallel::DataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options)
    : comm_(comm), flat_(flat), options_(options), bucket_of_(flat.entries().size()) {
  ND_CHECK(options.bucket_mb > 0 && options.first_bucket_mb > 0,
           "bucket sizes must be positive, got " << options.bucket_mb << " MB and " << options.first_bucket_mb << " MB");
  ND_CHECK(flat.device() == comm.device(), "data parallelism: the parameters are on " << flat.device().str()
                                                                                     << ", the communicator on "
                                                                                     << comm.device().str());
  const std::vector<FlatEntry>& entries = flat.entries();
  const double element_bytes = static_cast<double>(dtype_size(flat.grad_dtype()));
  double cap = options.first_bucket_mb * 1e6;
  for (size_t k = 0; k < entries.size(); ++k) {
    const double bytes = element_bytes * static_cast<double>(entries[k].offset + entries[k].numel);
    if (buckets_.empty() || element_bytes * static_cast<double>(buckets_.back().begin) + cap < bytes) {
      if (!buckets_.empty()) cap = options.bucket_mb * 1e6;
      Bucket b;
      b.first = k;
      b.begin = buckets_.empty() ? 0 : entries[k].offset;
      buckets_.push_back(b);
    }
    Bucket& b = buckets_.back();
    b.last = k + 1;
    // The last bucket reaches the end of the buffer, so the buckets tile it, padding included.
    b.length = (k + 1 == entries.size() ? flat.numel() : entries[k].offset + entries[k].numel) - b.begin;
    bucket_of_[k] = buckets_.size() - 1;
    Variable param = entries[k].param;
    param.set_grad_hook([this, k](Variable&) { on_gradient_final(k); });
  }
}

void DataParallel::broadcast_parameters() {
  if (comm_.size() > 1) comm_.broadcast(flat_.params(), 0);
}

void DataParallel::prepare_backward(bool first, bool last) {
  // A bucket left incomplete by the previous micro-batch (an unused parameter) keeps its
  // gradients in backward's buffers, which the next backward adds to: nothing is lost.
  last_ = last;
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.last - b.first);
    b.completed = false;
    if (first) b.accumulated = false;
    b.work = CommWork();
  }
}

void DataParallel::on_gradient_final(size_t entry) {
  Bucket& bucket = buckets_[bucket_of_[entry]];
  if (--bucket.pending == 0) complete(bucket);
}

void DataParallel::complete(Bucket& bucket) {
  if (bucket.completed) return;
  bucket.completed = true;
  if (!flat_.separate_grads() && !last_) return;  // gradients accumulate in place
  flat_.accumulate(bucket.first, bucket.last, /*overwrite=*/!bucket.accumulated);
  bucket.accumulated = true;
  if (!last_ || comm_.size() == 1) return;
  Tensor range = flat_.grads().narrow(bucket.begin, bucket.length);
  bucket.work = comm_.allreduce_async(range, ReduceOp::Avg);
}

void DataParallel::finish_gradient_sync() {
  // In bucket order, which every rank shares: the collectives match up across ranks.
  for (Bucket& b : buckets_) complete(b);
  for (Bucket& b : buckets_) b.work.wait();
}

}  // namespace nd::dist
