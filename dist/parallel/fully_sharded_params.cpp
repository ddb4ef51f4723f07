// FullyShardedDataParallel's parameters at ZeRO 3: the parameter shard, the pooled buffers that a
// block's parameters are all-gathered into just before use (the next blocks' gathers prefetched),
// and the parameters outside the blocks, kept whole and all-gathered after each update.
#include "dist/parallel/fully_sharded_data_parallel.h"

#include <algorithm>

#include "dist/comm/peer_memory.h"

namespace nd::dist {

namespace {

// Gathered parameter buffers: the block in use, the next one prefetched, and one whose gradients may
// still be on their way out when the prefetch starts (else a second block prefetched).
constexpr int kGathered = 3;

}  // namespace

// At construction: the owned slices move into the parameter shard, the parameters outside the
// blocks into whole buffers of their own, the blocks' parameters point into a gathered buffer (stale
// until gathered), and the full-size flat parameters are released.
void FullyShardedDataParallel::shard_parameters(int64_t pooled_length) {
  for (int i = 0; pooled_length > 0 && i < kGathered; ++i) {
    Gathered g;
    g.params = shared_tensor(comm_, {pooled_length}, flat_.param_dtype());
    gathered_.push_back(std::move(g));
  }
  param_shard_ = Tensor::zeros({shard_numel_}, flat_.param_dtype(), flat_.device());
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    param_shard_.narrow(b.local, owned_[i].length).copy_from(flat_.params().narrow(owned_[i].begin, owned_[i].length));
    if (b.unit < 0) {
      b.whole = flat_.params().narrow(b.begin, b.length).clone();
      bind_params(b, b.whole, /*in_shard=*/false);
    } else {
      bind_params(b, gathered_.front().params, /*in_shard=*/false);
    }
  }
  flat_.release_params();
}

void FullyShardedDataParallel::bind_params(Bucket& bucket, const Tensor& values, bool in_shard) {
  const size_t index = static_cast<size_t>(&bucket - buckets_.data());
  for (size_t k = bucket.first; k < bucket.last; ++k) {
    const FlatEntry& e = flat_.entries()[k];
    Variable param = e.param;
    if (in_shard && reads_shard(index, k)) {
      const ShardSlice& mine = owned_[index];
      param.data() = param_shard_.narrow(mine.local + e.offset - mine.begin, e.numel).view(param.shape());
    } else {
      param.data() = values.narrow(e.offset - bucket.begin, e.numel).view(param.shape());
    }
  }
}

bool FullyShardedDataParallel::reads_shard(size_t bucket, size_t entry) const {
  const ShardSlice& mine = owned_[bucket];
  const FlatEntry& e = flat_.entries()[entry];
  return e.offset >= mine.begin && e.offset + e.numel <= mine.begin + mine.length;
}

void FullyShardedDataParallel::copy_edge_pieces(size_t index, Tensor& whole) {
  const Bucket& b = buckets_[index];
  const ShardSlice& mine = owned_[index];
  for (size_t k = b.first; k < b.last; ++k) {
    if (reads_shard(index, k)) continue;
    const FlatEntry& e = flat_.entries()[k];
    const int64_t begin = std::max(e.offset, mine.begin), end = std::min(e.offset + e.numel, mine.begin + mine.length);
    if (begin >= end) continue;
    Tensor dst = whole.narrow(begin - b.begin, end - begin);
    copy_in_stream_order(param_shard_.narrow(mine.local + begin - mine.begin, end - begin), dst);
  }
}

void FullyShardedDataParallel::before_forward(int unit) {
  const int i = bucket_of_unit(unit);
  if (!shard_params_ || i < 0) return;
  // A forward from the first block reads parameters that an update (or a load) may have changed
  // since they were gathered: everything is gathered afresh, the same way every step.
  if (unit == first_unit_) forget_gathered();
  use_gathered(static_cast<size_t>(i), /*pin=*/true);
  const int next = bucket_of_unit(unit + 1), after = bucket_of_unit(unit + 2);
  if (next >= 0) launch_gather(static_cast<size_t>(next));
  // Launched a block earlier, a gather has two blocks' compute to hide behind, not one.
  if (after >= 0) launch_gather(static_cast<size_t>(after), /*required=*/false);
}

void FullyShardedDataParallel::after_forward(int unit) {
  const int i = bucket_of_unit(unit);
  if (i >= 0) unpin(static_cast<size_t>(i));
}

// Starts gathering the bucket's parameters on the communicator's stream, into the least recently
// used buffer no block holds pinned; a bucket already gathered (or on its way) is pinned again. The
// buffer's earlier readers are compute work already queued, which the gather waits for (dist/comm/comm.h
// rule 1), so it overlaps the compute queued after it.
void FullyShardedDataParallel::launch_gather(size_t index, bool required) {
  Bucket& b = buckets_[index];
  if (b.gathered >= 0) {
    // Still there from an earlier use (the last blocks between forward and backward): kept for this
    // one, so that a deeper prefetch does not take its buffer.
    gathered_[static_cast<size_t>(b.gathered)].pinned = true;
    return;
  }
  int pick = -1;
  for (size_t g = 0; g < gathered_.size(); ++g)
    if (!gathered_[g].pinned && (pick < 0 || gathered_[g].used < gathered_[static_cast<size_t>(pick)].used))
      pick = static_cast<int>(g);
  if (pick < 0 && !required) return;
  ND_CHECK(pick >= 0, "ZeRO 3: all " << gathered_.size() << " gathered parameter buffers are in use");
  Gathered& g = gathered_[static_cast<size_t>(pick)];
  if (g.bucket >= 0) buckets_[static_cast<size_t>(g.bucket)].gathered = -1;
  g.work.wait();  // a gather never waited for (a prefetch nobody used): ordered before its reuse
  g.bucket = static_cast<int>(index);
  g.pinned = true;  // until its block is done with it
  g.used = ++clock_;
  b.gathered = pick;
  const int64_t slice = b.length / comm_.size();
  Tensor whole = g.params.narrow(0, b.length);
  Tensor mine = param_shard_.narrow(b.local, slice);
  // This rank's slice is read in place (bind_params), so the gather may leave it alone; the pieces
  // that cross its edges are copied first, on the compute stream, which the gather's stream waits
  // for. A comm that writes the own block anyway (NCCL, MPI) needs no copy.
  if (shares(comm_, g.params)) copy_edge_pieces(index, whole);
  g.work = all_gather_others_async(comm_, mine, whole);
}

// The bucket's parameters, gathered (now, unless prefetched), readable by later compute work and
// bound to its Variables.
void FullyShardedDataParallel::use_gathered(size_t index, bool pin) {
  launch_gather(index);
  Bucket& b = buckets_[index];
  Gathered& g = gathered_[static_cast<size_t>(b.gathered)];
  g.work.wait();
  g.work = CommWork();
  g.pinned = pin;
  g.used = ++clock_;
  bind_params(b, g.params, /*in_shard=*/true);
}

// A no-op for a bucket not gathered (ZeRO 2, or outside the blocks).
void FullyShardedDataParallel::unpin(size_t index) {
  const int g = buckets_[index].gathered;
  if (g >= 0) gathered_[static_cast<size_t>(g)].pinned = false;
}

void FullyShardedDataParallel::forget_gathered() {
  for (Gathered& g : gathered_) {
    g.work.wait();
    g.work = CommWork();
    if (g.bucket >= 0) buckets_[static_cast<size_t>(g.bucket)].gathered = -1;
    g.bucket = -1;
    g.pinned = false;
  }
}

void FullyShardedDataParallel::gather_for_read(int unit) {
  const int i = bucket_of_unit(unit);
  if (shard_params_ && i >= 0) use_gathered(static_cast<size_t>(i), /*pin=*/false);
}

// After the update: the parameters outside the blocks all-gathered from the shard into their whole
// buffers; the blocks' gathered copies are stale now.
void FullyShardedDataParallel::gather_resident() {
  forget_gathered();
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (b.unit >= 0) continue;
    b.work = comm_.all_gather_async(param_shard_.narrow(b.local, owned_[i].length), b.whole);
  }
  for (Bucket& b : buckets_) {
    b.work.wait();
    b.work = CommWork();
  }
}

// Rank 0's parameters to every rank, one bucket at a time through a gathered buffer (no rank holds
// all of them), each rank keeping its slices.
void FullyShardedDataParallel::broadcast_sharded() {
  if (comm_.size() == 1) return;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    Tensor values = b.unit < 0 ? b.whole : gathered_.front().params.narrow(0, b.length);
    if (b.unit >= 0) comm_.all_gather(param_shard_.narrow(b.local, owned_[i].length), values);
    comm_.broadcast(values, 0);
    Tensor mine = param_shard_.narrow(b.local, owned_[i].length);
    mine.copy_from(values.narrow(owned_[i].begin - b.begin, owned_[i].length));
  }
  forget_gathered();
}

}  // namespace nd::dist
