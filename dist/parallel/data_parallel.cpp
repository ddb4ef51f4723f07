// DataParallel: bucket layout over the flat buffers, the hooks that complete and launch buckets,
// the final wait, and ZeRO's shard (reduce-scatter into it, all-gather out of it); ZeRO 2 and 3's
// per-unit staging and gathering are in data_parallel_units.cpp. Ordering against compute is the
// Comm's business (dist/comm/comm.h).
#include "dist/parallel/data_parallel.h"

#include <algorithm>

namespace nd::dist {

DataParallel::DataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options)
    : comm_(comm),
      flat_(flat),
      options_(options),
      buckets_of_(flat.entries().size()),
      entry_done_(flat.entries().size(), 0) {
  ND_CHECK(options.bucket_mb > 0 && options.first_bucket_mb > 0,
           "bucket sizes must be positive, got " << options.bucket_mb << " MB and " << options.first_bucket_mb << " MB");
  ND_CHECK(options.zero >= 0 && options.zero <= 3, "--zero " << options.zero << " is not 0, 1, 2 or 3");
  ND_CHECK((options.zero >= 2) == !flat.full_grads(),
           "ZeRO " << options.zero << ": the flat buffers must be built "
                   << (options.zero >= 2 ? "without" : "with") << " full-size gradients (dist::FlatOptions)");
  ND_CHECK(flat.device() == comm.device(), "data parallelism: the parameters are on " << flat.device().str()
                                                                                     << ", the communicator on "
                                                                                     << comm.device().str());
  if (options.zero == 0)
    plan_entry_buckets();
  else if (options.zero == 1)
    plan_sharded_buckets();
  else
    plan_unit_buckets();
  const std::vector<FlatEntry>& entries = flat.entries();
  for (size_t k = 0; k < entries.size(); ++k) {
    Variable param = entries[k].param;
    param.set_grad_hook([this, k](Variable&) { on_gradient_final(k); });
  }
}

// DDP: buckets end at tensor boundaries, the first one small so communication starts early.
void DataParallel::plan_entry_buckets() {
  const std::vector<FlatEntry>& entries = flat_.entries();
  const double element_bytes = static_cast<double>(dtype_size(flat_.grad_dtype()));
  double cap = options_.first_bucket_mb * 1e6;
  for (size_t k = 0; k < entries.size(); ++k) {
    const double bytes = element_bytes * static_cast<double>(entries[k].offset + entries[k].numel);
    if (buckets_.empty() || element_bytes * static_cast<double>(buckets_.back().begin) + cap < bytes) {
      if (!buckets_.empty()) cap = options_.bucket_mb * 1e6;
      Bucket b;
      b.first = k;
      b.begin = buckets_.empty() ? 0 : entries[k].offset;
      buckets_.push_back(b);
    }
    Bucket& b = buckets_.back();
    b.last = k + 1;
    // The last bucket reaches the end of the buffer, so the buckets tile it, padding included.
    b.length = (k + 1 == entries.size() ? flat_.numel() : entries[k].offset + entries[k].numel) - b.begin;
    buckets_of_[k] = {buckets_.size() - 1, buckets_.size()};
  }
}

// ZeRO: buckets of a whole number of (dp x alignment) units, cut wherever that falls (a tensor may
// span two buckets: both wait for it), so every bucket splits into dp equal aligned slices.
void DataParallel::plan_sharded_buckets() {
  const int64_t n = comm_.size(), unit = flat_.alignment() * n, numel = flat_.numel();
  ND_CHECK(numel % unit == 0, "ZeRO: the flat buffers (" << numel << " elements) must be built for " << n
                                                         << " shards (dist::FlatParams' shards argument)");
  const double element_bytes = static_cast<double>(dtype_size(flat_.grad_dtype()));
  auto units_of = [&](double mb) { return std::max<int64_t>(1, static_cast<int64_t>(mb * 1e6 / element_bytes) / unit); };
  int64_t begin = 0;
  while (begin < numel) {
    Bucket b;
    b.begin = begin;
    b.length = std::min(numel - begin, unit * units_of(buckets_.empty() ? options_.first_bucket_mb : options_.bucket_mb));
    b.local = begin / n;
    owned_.push_back(ShardSlice{begin + comm_.rank() * (b.length / n), b.length / n, b.local});
    buckets_.push_back(b);
    begin += b.length;
  }
  shard_numel_ = numel / n;
  const std::vector<FlatEntry>& entries = flat_.entries();
  auto bucket_at = [&](int64_t element) {
    size_t i = 0;
    while (i + 1 < buckets_.size() && buckets_[i + 1].begin <= element) ++i;
    return i;
  };
  for (Bucket& b : buckets_) b.first = b.last = entries.size();
  for (size_t k = 0; k < entries.size(); ++k) {
    const size_t lo = bucket_at(entries[k].offset);
    const size_t hi = bucket_at(entries[k].offset + std::max<int64_t>(entries[k].numel, 1) - 1) + 1;
    buckets_of_[k] = {lo, hi};
    for (size_t i = lo; i < hi; ++i) {
      if (buckets_[i].first == entries.size()) buckets_[i].first = k;
      buckets_[i].last = k + 1;
    }
  }
  for (Bucket& b : buckets_)
    if (b.first == entries.size()) b.first = b.last = 0;  // padding only
}

void DataParallel::broadcast_parameters() {
  if (options_.zero == 3) return broadcast_sharded();
  if (comm_.size() > 1) comm_.broadcast(flat_.params(), 0);
}

void DataParallel::prepare_backward(bool first, bool last) {
  // ZeRO 2 and 3: the previous micro-batch's gradients go into the shard, a bucket left incomplete
  // (an unused parameter) too, in bucket order on every rank; the staging buffers start over.
  if (options_.zero >= 2 && !first) {
    for (Bucket& b : buckets_) complete(b);
    drain_into_shard();
    flat_.zero_grad();
  }
  next_pooled_ = 0;  // the same buffers for the same blocks every micro-batch (a CUDA graph replays them)
  // A bucket left incomplete by the previous micro-batch (an unused parameter) keeps its
  // gradients in backward's buffers, which the next backward adds to: nothing is lost.
  last_ = last;
  if (first) shard_filled_ = false;
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.last - b.first);
    b.completed = false;
    b.work = CommWork();
  }
  std::fill(entry_done_.begin(), entry_done_.end(), 0);
}

void DataParallel::on_gradient_final(size_t entry) {
  for (size_t i = buckets_of_[entry].first; i < buckets_of_[entry].second; ++i)
    if (--buckets_[i].pending == 0) complete(buckets_[i]);
}

// Moves the bucket's entries not yet moved this micro-batch into grads() (separate grads) or fills
// the missing ones with zeros, in runs that share the overwrite decision.
void DataParallel::accumulate_entries(const Bucket& bucket) {
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

void DataParallel::complete(Bucket& bucket) {
  if (bucket.completed) return;
  bucket.completed = true;
  if (options_.zero >= 2) return complete_staged(bucket);
  const bool reduce_now = last_;
  if (!flat_.separate_grads() && !reduce_now) return;  // gradients accumulate in place
  accumulate_entries(bucket);
  if (!reduce_now) return;
  if (options_.zero >= 1) return reduce_scatter(bucket);
  if (comm_.size() == 1) return;
  Tensor range = flat_.grads().narrow(bucket.begin, bucket.length);
  bucket.work = comm_.allreduce_async(range, ReduceOp::Avg);
}

// ZeRO 1: the bucket's average over the group, this rank's slice of it, in place.
void DataParallel::reduce_scatter(Bucket& bucket) {
  if (comm_.size() == 1) return;  // one rank: the bucket is its own average, in place
  const int64_t slice = bucket.length / comm_.size();
  Tensor input = flat_.grads().narrow(bucket.begin, bucket.length);
  Tensor out = flat_.grads().narrow(owned_[static_cast<size_t>(&bucket - buckets_.data())].begin, slice);
  bucket.work = comm_.reduce_scatter_async(input, out, ReduceOp::Avg);
}

void DataParallel::drain_into_shard() {
  for (Bucket& b : buckets_) {
    b.work.wait();
    b.work = CommWork();
  }
  for (Staging& st : staging_) flush(st);
  shard_filled_ = true;
}

void DataParallel::finish_gradient_sync() {
  // In bucket order, which every rank shares: the collectives match up across ranks.
  for (Bucket& b : buckets_) complete(b);
  if (options_.zero >= 2) return drain_into_shard();
  for (Bucket& b : buckets_) b.work.wait();
}

void DataParallel::gather_parameters() {
  if (options_.zero == 3) return gather_resident();
  if (options_.zero == 0 || comm_.size() == 1) return;
  Tensor& params = flat_.params();
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    Tensor mine = params.narrow(owned_[i].begin, owned_[i].length);
    Tensor whole = params.narrow(b.begin, b.length);
    b.work = comm_.all_gather_async(mine, whole);  // in place: `mine` is block rank() of `whole`
  }
  for (Bucket& b : buckets_) {
    b.work.wait();
    b.work = CommWork();
  }
}

int64_t DataParallel::buffer_bytes() const {
  int64_t bytes = 0;
  for (const Tensor* t : {&shard_grads_, &param_shard_})
    if (t->defined()) bytes += t->numel() * static_cast<int64_t>(dtype_size(t->dtype()));
  return bytes + staging_bytes();
}

}  // namespace nd::dist
