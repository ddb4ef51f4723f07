// The engines' shared pieces: bucket planning over the flat layout, the gradient hooks, the
// all-gather of the owned slices.
#include "dist/parallel/gradient_buckets.h"

#include <algorithm>

namespace nd::dist {

void check_data_parallel(const Comm& comm, const FlatParams& flat, const DataParallelOptions& options) {
  ND_CHECK(options.bucket_mb > 0 && options.first_bucket_mb > 0,
           "bucket sizes must be positive, got " << options.bucket_mb << " MB and " << options.first_bucket_mb << " MB");
  ND_CHECK(options.zero >= 0 && options.zero <= 3, "--zero " << options.zero << " is not 0, 1, 2 or 3");
  ND_CHECK((options.zero >= 2) == !flat.full_grads(),
           "ZeRO " << options.zero << ": the flat buffers must be built "
                   << (options.zero >= 2 ? "without" : "with") << " full-size gradients (dist::FlatOptions)");
  ND_CHECK(flat.device() == comm.device(), "data parallelism: the parameters are on " << flat.device().str()
                                                                                     << ", the communicator on "
                                                                                     << comm.device().str());
}

std::vector<BucketRange> entry_buckets(const FlatParams& flat, const DataParallelOptions& options) {
  const std::vector<FlatEntry>& entries = flat.entries();
  const double element_bytes = static_cast<double>(dtype_size(flat.grad_dtype()));
  std::vector<BucketRange> buckets;
  double cap = options.first_bucket_mb * 1e6;
  for (size_t k = 0; k < entries.size(); ++k) {
    const double bytes = element_bytes * static_cast<double>(entries[k].offset + entries[k].numel);
    if (buckets.empty() || element_bytes * static_cast<double>(buckets.back().begin) + cap < bytes) {
      if (!buckets.empty()) cap = options.bucket_mb * 1e6;
      BucketRange b;
      b.first = k;
      b.begin = buckets.empty() ? 0 : entries[k].offset;
      buckets.push_back(b);
    }
    BucketRange& b = buckets.back();
    b.last = k + 1;
    // The last bucket reaches the end of the buffer, so the buckets tile it, padding included.
    b.length = (k + 1 == entries.size() ? flat.numel() : entries[k].offset + entries[k].numel) - b.begin;
  }
  return buckets;
}

std::vector<BucketRange> sharded_buckets(const FlatParams& flat, int shards, const DataParallelOptions& options) {
  const int64_t n = shards, unit = flat.alignment() * n, numel = flat.numel();
  ND_CHECK(numel % unit == 0, "ZeRO: the flat buffers (" << numel << " elements) must be built for " << n
                                                         << " shards (dist::FlatParams' shards argument)");
  const double element_bytes = static_cast<double>(dtype_size(flat.grad_dtype()));
  auto units_of = [&](double mb) { return std::max<int64_t>(1, static_cast<int64_t>(mb * 1e6 / element_bytes) / unit); };
  std::vector<BucketRange> buckets;
  for (const FlatSegment& seg : flat.segments()) {
    const int64_t end = seg.begin + seg.length;
    for (int64_t begin = seg.begin; begin < end;) {
      BucketRange b;
      b.begin = begin;
      b.length = seg.unit != -1 ? seg.length
                                : std::min(end - begin, unit * units_of(buckets.empty() ? options.first_bucket_mb
                                                                                        : options.bucket_mb));
      b.local = begin / n;
      b.unit = seg.unit;
      buckets.push_back(b);
      begin += b.length;
    }
  }
  // Each bucket's entries: those overlapping it (a tensor across a cut belongs to both).
  const std::vector<FlatEntry>& entries = flat.entries();
  auto bucket_at = [&](int64_t element) {
    size_t i = 0;
    while (i + 1 < buckets.size() && buckets[i + 1].begin <= element) ++i;
    return i;
  };
  for (BucketRange& b : buckets) b.first = b.last = entries.size();
  for (size_t k = 0; k < entries.size(); ++k) {
    const size_t lo = bucket_at(entries[k].offset);
    const size_t hi = bucket_at(entries[k].offset + std::max<int64_t>(entries[k].numel, 1) - 1) + 1;
    for (size_t i = lo; i < hi; ++i) {
      if (buckets[i].first == entries.size()) buckets[i].first = k;
      buckets[i].last = k + 1;
    }
  }
  for (BucketRange& b : buckets)
    if (b.first == entries.size()) b.first = b.last = 0;  // padding only
  return buckets;
}

std::vector<BucketRange> unit_buckets(const FlatParams& flat, int shards) {
  const int64_t n = shards, unit = flat.alignment() * n;
  ND_CHECK(flat.numel() % unit == 0, "ZeRO: the flat buffers (" << flat.numel() << " elements) must be built for "
                                                                << n << " shards (dist::FlatOptions::shards)");
  std::vector<BucketRange> buckets;
  for (const FlatSegment& seg : flat.segments()) {
    ND_CHECK(seg.begin % unit == 0 && seg.length % unit == 0,
             "ZeRO: a segment of the flat buffers is not aligned to " << n << " shards");
    BucketRange b;
    b.first = seg.first;
    b.last = seg.last;
    b.begin = seg.begin;
    b.length = seg.length;
    b.local = seg.begin / n;
    b.unit = seg.unit;
    buckets.push_back(b);
  }
  return buckets;
}

std::vector<ShardSlice> owned_slices(const std::vector<BucketRange>& buckets, int rank, int shards) {
  std::vector<ShardSlice> owned;
  for (const BucketRange& b : buckets) {
    const int64_t slice = b.length / shards;
    owned.push_back(ShardSlice{b.begin + rank * slice, slice, b.local});
  }
  return owned;
}

void BucketHooks::install(FlatParams& flat, const std::vector<BucketRange>& buckets,
                          std::function<void(size_t)> complete) {
  const std::vector<FlatEntry>& entries = flat.entries();
  // Every bucket that lists an entry waits for it; those of one entry are consecutive.
  buckets_of_.assign(entries.size(), {0, 0});
  std::vector<char> seen(entries.size(), 0);
  for (size_t i = 0; i < buckets.size(); ++i)
    for (size_t k = buckets[i].first; k < buckets[i].last; ++k) {
      if (!seen[k]) buckets_of_[k].first = i;
      buckets_of_[k].second = i + 1;
      seen[k] = 1;
    }
  entries_.clear();
  for (const BucketRange& b : buckets) entries_.push_back(static_cast<int>(b.last - b.first));
  pending_.assign(buckets.size(), 0);
  completed_.assign(buckets.size(), 0);
  complete_ = std::move(complete);
  for (size_t k = 0; k < entries.size(); ++k) {
    Variable param = entries[k].param;
    param.set_grad_hook([this, k](Variable&) { on_gradient_final(k); });
  }
}

void BucketHooks::start() {
  pending_ = entries_;
  std::fill(completed_.begin(), completed_.end(), 0);
}

void BucketHooks::on_gradient_final(size_t entry) {
  for (size_t i = buckets_of_[entry].first; i < buckets_of_[entry].second; ++i)
    if (--pending_[i] == 0) complete(i);
}

void BucketHooks::complete(size_t bucket) {
  if (completed_[bucket]) return;
  completed_[bucket] = 1;
  complete_(bucket);
}

void BucketHooks::complete_all() {
  for (size_t i = 0; i < completed_.size(); ++i) complete(i);
}

void all_gather_owned(Comm& comm, Tensor& values, const std::vector<ShardSlice>& owned) {
  if (comm.size() == 1) return;
  std::vector<CommWork> works;
  for (const ShardSlice& s : owned) {
    Tensor mine = values.narrow(s.begin, s.length);
    Tensor whole = values.narrow(s.begin - comm.rank() * s.length, s.length * comm.size());
    works.push_back(comm.all_gather_async(mine, whole));
  }
  for (CommWork& work : works) work.wait();
}

}  // namespace nd::dist
