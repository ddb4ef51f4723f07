// DataParallel's per-unit machinery (ZeRO 2 and 3): one bucket per segment of the flat layout, the
// staging buffers that a block's backward writes its gradients into and that are reduce-scattered
// into the shard, and (ZeRO 3) the parameter shard with the pooled buffers that a block's
// parameters are all-gathered into just before use, the next block's gather prefetched.
#include "dist/parallel/data_parallel.h"

#include <algorithm>

#include "dist/comm/peer_memory.h"
#include "tensor/env.h"

namespace nd::dist {

namespace {

// Staging buffers shared by the blocks' gradients. Two suffice: when block i's backward starts,
// block i + 1's gradients are final and their reduce-scatter launched, so i takes the buffer of
// i + 2, whose reduce-scatter the compute stream waits for (on the GPU an event, not the host).
constexpr int kPooled = 2;
// Gathered parameter buffers (ZeRO 3): the block in use, the next one prefetched, and one whose
// gradients may still be on their way out when the prefetch starts (else a second block prefetched).
constexpr int kGathered = 3;

int64_t bytes_of(const Tensor& t) { return t.defined() ? t.numel() * static_cast<int64_t>(dtype_size(t.dtype())) : 0; }

}  // namespace

// One bucket per segment of the layout (FlatParams pads each to dp x the alignment), so a unit's
// gradients are one contiguous, evenly divisible range; pooled staging for the blocks, a buffer of
// its own (bound for good) for each bucket outside them.
void DataParallel::plan_unit_buckets() {
  const int64_t n = comm_.size(), unit = flat_.alignment() * n;
  ND_CHECK(flat_.numel() % unit == 0, "ZeRO: the flat buffers (" << flat_.numel() << " elements) must be built for "
                                                                 << n << " shards (dist::FlatOptions::shards)");
  int64_t pooled_length = 0;
  for (const FlatSegment& seg : flat_.segments()) {
    ND_CHECK(seg.begin % unit == 0 && seg.length % unit == 0,
             "ZeRO " << options_.zero << ": a segment of the flat buffers is not aligned to " << n << " shards");
    Bucket b;
    b.first = seg.first;
    b.last = seg.last;
    b.begin = seg.begin;
    b.length = seg.length;
    b.local = seg.begin / n;
    b.unit = seg.unit;
    owned_.push_back(ShardSlice{b.begin + comm_.rank() * (b.length / n), b.length / n, b.local});
    for (size_t k = seg.first; k < seg.last; ++k) buckets_of_[k] = {buckets_.size(), buckets_.size() + 1};
    if (seg.unit >= 0) {
      if (static_cast<size_t>(seg.unit) >= bucket_of_unit_.size()) bucket_of_unit_.resize(seg.unit + 1, -1);
      ND_CHECK(bucket_of_unit_[seg.unit] < 0, "ZeRO: unit " << seg.unit << " is not one contiguous run of the layout");
      bucket_of_unit_[seg.unit] = static_cast<int>(buckets_.size());
      first_unit_ = first_unit_ < 0 ? seg.unit : std::min(first_unit_, seg.unit);
      pooled_length = std::max(pooled_length, seg.length);
    }
    buckets_.push_back(b);
  }
  // Every micro-batch lands in the f32 shard: the first directly (f32 gradients, or bf16 ones the
  // comm widens), later ones straight too where the comm adds a reduce-scatter into its output
  // (accumulate_), else (and other bf16 ones) beside their staging buffer first (Staging::landing).
  shard_numel_ = flat_.numel() / n;
  shard_grads_ = Tensor::zeros({shard_numel_}, DType::F32, flat_.device());
  // Where the comm reduce-scatters bf16 into f32 itself, a block's bf16 gradients need no f32 copy
  // under f32 main gradients (a pass over 6 bytes an element on the compute stream, and twice the
  // bytes on the wire), and under bf16 ones the first micro-batch's land in the f32 shard directly,
  // summed in f32 and never rounded to bf16 (no landing place, no pass to add it into the shard).
  widen_ = flat_.param_dtype() == DType::BF16 &&
           (flat_.grad_dtype() == DType::F32 || flat_.grad_dtype() == DType::BF16) && flat_.device().is_cuda() &&
           reduce_scatter_widens(comm_, ReduceOp::Avg);
  // Where the comm also adds a reduce-scatter into the f32 shard, later micro-batches skip the landing
  // place: no write and read back of 1/dp of the block in the gradient dtype per micro-batch (about 1
  // GB a block of the 6.7B GPT at dp 2), no pass on the compute stream, and bf16 gradients' partial
  // sums stay in f32 rather than being rounded to bf16 between micro-batches.
  accumulate_ = first_into_shard() && reduce_scatter_accumulates(comm_, ReduceOp::Avg, reduced_dtype(), DType::F32);
  auto make_staging = [&](int64_t length) {
    Staging s;
    s.grads = Tensor::zeros({length}, flat_.param_dtype(), flat_.device());
    if (flat_.separate_grads() && !widen_) s.reduce = Tensor::zeros({length}, DType::F32, flat_.device());
    if (!accumulate_) s.landing = Tensor::zeros({length / n}, flat_.grad_dtype(), flat_.device());
    staging_.push_back(std::move(s));
  };
  if (pooled_length > 0)
    for (int i = 0; i < kPooled; ++i) make_staging(pooled_length);
  for (Bucket& b : buckets_)
    if (b.unit < 0) {
      make_staging(b.length);
      bind(b, static_cast<int>(staging_.size()) - 1);
    }
  if (options_.zero == 3) {
    in_place_ = !env_equals("NANODIST_ZERO3_IN_PLACE", "0");
    second_prefetch_ = !env_equals("NANODIST_ZERO3_PREFETCH", "1");
    for (int i = 0; pooled_length > 0 && i < kGathered; ++i) {
      Gathered g;
      g.params = in_place_ ? shared_tensor(comm_, {pooled_length}, flat_.param_dtype())
                           : Tensor::zeros({pooled_length}, flat_.param_dtype(), flat_.device());
      gathered_.push_back(std::move(g));
    }
    shard_parameters();
  }
}

DType DataParallel::reduced_dtype() const {
  return flat_.separate_grads() && !widen_ ? DType::F32 : flat_.param_dtype();
}

bool DataParallel::first_into_shard() const { return flat_.grad_dtype() == DType::F32 || widen_; }

int DataParallel::bucket_of_unit(int unit) const {
  if (unit < 0 || static_cast<size_t>(unit) >= bucket_of_unit_.size()) return -1;
  return bucket_of_unit_[static_cast<size_t>(unit)];
}

// Points the bucket's parameters' gradients into staging buffer `index`, as "no contribution yet"
// (a gradient written before the binding, into a buffer of its own, is carried over).
void DataParallel::bind(Bucket& bucket, int index) {
  Staging& s = staging_[static_cast<size_t>(index)];
  flush(s);  // the reduce-scatter that read it last is done before backward writes it again
  const std::vector<FlatEntry>& entries = flat_.entries();
  const int self = static_cast<int>(&bucket - buckets_.data());
  if (s.layout != self) {
    // Another bucket's layout: its gradients may sit in this one's padding, which must be zero.
    const Bucket* last = s.layout >= 0 ? &buckets_[static_cast<size_t>(s.layout)] : nullptr;
    bool same = last != nullptr && last->last - last->first == bucket.last - bucket.first;
    for (size_t k = 0; same && k < bucket.last - bucket.first; ++k) {
      const FlatEntry &a = entries[bucket.first + k], &b = entries[last->first + k];
      same = a.offset - bucket.begin == b.offset - last->begin && a.numel == b.numel;
    }
    if (!same && s.layout >= 0) s.grads.zero_();
    s.layout = self;
  }
  for (size_t k = bucket.first; k < bucket.last; ++k) {
    Variable param = entries[k].param;
    Tensor view = s.grads.narrow(entries[k].offset - bucket.begin, entries[k].numel).view(param.shape());
    const bool stray = param.has_grad() && !param.autograd()->grad_stale;
    if (stray) view.copy_from(param.grad());
    param.set_grad(view);
    if (!stray) param.zero_grad();
  }
  bucket.staging = index;
}

// Orders later compute after the buffer's last reduce-scatter, and adds a result that landed beside
// it into the shard.
void DataParallel::flush(Staging& s) {
  s.work.wait();
  s.work = CommWork();
  if (s.pending < 0) return;
  const Bucket& b = buckets_[static_cast<size_t>(s.pending)];
  const int64_t slice = b.length / comm_.size();
  Tensor dst = shard_grads_.narrow(b.local, slice);
  accumulate_into_f32(s.landing.narrow(0, slice), dst, s.overwrite);
  s.pending = -1;
}

void DataParallel::before_forward(int unit) {
  const int i = options_.zero == 3 ? bucket_of_unit(unit) : -1;
  if (i < 0) return;
  // A forward from the first block reads parameters that an update (or a load) may have changed
  // since they were gathered: everything is gathered afresh, the same way every step.
  if (unit == first_unit_) forget_gathered();
  use_gathered(static_cast<size_t>(i), /*pin=*/true);
  const int next = bucket_of_unit(unit + 1), after = bucket_of_unit(unit + 2);
  if (next >= 0) launch_gather(static_cast<size_t>(next));
  // Launched a block earlier, a gather has two blocks' compute to hide behind, not one.
  if (after >= 0 && second_prefetch_) launch_gather(static_cast<size_t>(after), /*required=*/false);
}

void DataParallel::after_forward(int unit) {
  const int i = options_.zero == 3 ? bucket_of_unit(unit) : -1;
  if (i >= 0) unpin(static_cast<size_t>(i));
}

void DataParallel::before_backward(int unit) {
  const int i = options_.zero >= 2 ? bucket_of_unit(unit) : -1;
  if (i < 0) return;
  Bucket& b = buckets_[static_cast<size_t>(i)];
  if (options_.zero == 3) {
    use_gathered(static_cast<size_t>(i), /*pin=*/true);
    const int previous = bucket_of_unit(unit - 1), earlier = bucket_of_unit(unit - 2);
    if (previous >= 0) launch_gather(static_cast<size_t>(previous));
    // Queued now, before this block's reduce-scatter, so it waits only for the one already queued.
    if (earlier >= 0 && second_prefetch_) launch_gather(static_cast<size_t>(earlier), /*required=*/false);
  }
  if (b.staging >= 0) return;
  bind(b, next_pooled_);
  next_pooled_ = (next_pooled_ + 1) % kPooled;
}

// The bucket's staging buffer, every gradient in it (zeros where none came), reduce-scattered into
// the shard; a pooled buffer is then free for the next block once that reduce-scatter is done, and
// (ZeRO 3) the block's gathered parameters once their last reader, this backward, has run.
void DataParallel::complete_staged(Bucket& bucket) {
  if (bucket.staging < 0) {  // a block whose backward never started: its gradients are zeros
    bind(bucket, next_pooled_);
    next_pooled_ = (next_pooled_ + 1) % kPooled;
  }
  const std::vector<FlatEntry>& entries = flat_.entries();
  for (size_t k = bucket.first; k < bucket.last; ++k) entries[k].param.grad();  // no contribution: zeros
  Staging& s = staging_[static_cast<size_t>(bucket.staging)];
  Tensor input = s.grads.narrow(0, bucket.length);
  if (flat_.separate_grads() && !widen_) {
    Tensor wide = s.reduce.narrow(0, bucket.length);
    accumulate_into_f32(input, wide, /*overwrite=*/true);
    input = wide;
  }
  bucket.work = scatter_into_shard(bucket, s, input);
  s.work = bucket.work;
  if (bucket.unit < 0) return;  // its own buffer: stays bound
  for (size_t k = bucket.first; k < bucket.last; ++k) {
    Variable param = entries[k].param;
    param.clear_grad();
  }
  bucket.staging = -1;
  if (options_.zero == 3) unpin(static_cast<size_t>(&bucket - buckets_.data()));
}

// The reduce-scatter of a micro-batch's staged gradients (`input`, the bucket's length) into the
// bucket's shard slice: overwriting it on the first micro-batch, adding to it on later ones where the
// comm accumulates, else through the landing place (added in by flush). The comm's stream writes the
// slice, in call order with the earlier micro-batches' reduce-scatters into it; nothing else touches
// it until finish_gradient_sync waits for the bucket's work.
CommWork DataParallel::scatter_into_shard(Bucket& bucket, Staging& s, const Tensor& input) {
  const int64_t slice = bucket.length / comm_.size();
  Tensor shard = shard_grads_.narrow(bucket.local, slice);
  if (first_into_shard() && !shard_filled_) return comm_.reduce_scatter_async(input, shard, ReduceOp::Avg);
  if (accumulate_) return comm_.peer_memory()->reduce_scatter_accumulate_async(input, shard, ReduceOp::Avg);
  Tensor out = s.landing.narrow(0, slice);
  s.pending = static_cast<int>(&bucket - buckets_.data());
  s.overwrite = !shard_filled_;
  return comm_.reduce_scatter_async(input, out, ReduceOp::Avg);
}

// ZeRO 3, at construction: the owned slices move into the parameter shard, the parameters outside
// the blocks into whole buffers of their own, the blocks' parameters point into a gathered buffer
// (stale until gathered), and the full-size flat parameters are released.
void DataParallel::shard_parameters() {
  param_shard_ = Tensor::zeros({shard_numel_}, flat_.param_dtype(), flat_.device());
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    param_shard_.narrow(b.local, owned_[i].length).copy_from(flat_.params().narrow(owned_[i].begin, owned_[i].length));
    if (b.unit < 0) {
      b.whole = flat_.params().narrow(b.begin, b.length).clone();
      bind_params(b, b.whole);
    } else {
      bind_params(b, gathered_.front().params);
    }
  }
  flat_.release_params();
}

void DataParallel::bind_params(Bucket& bucket, const Tensor& values, bool in_shard) {
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

bool DataParallel::reads_shard(size_t bucket, size_t entry) const {
  const ShardSlice& mine = owned_[bucket];
  const FlatEntry& e = flat_.entries()[entry];
  return e.offset >= mine.begin && e.offset + e.numel <= mine.begin + mine.length;
}

void DataParallel::copy_edge_pieces(size_t index, Tensor& whole) {
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

// Starts gathering the bucket's parameters on the communicator's stream, into the least recently
// used buffer no block holds pinned; a bucket already gathered (or on its way) is pinned again. The
// buffer's earlier readers are compute work already queued, which the gather waits for (dist/comm/comm.h
// rule 1), so it overlaps the compute queued after it.
void DataParallel::launch_gather(size_t index, bool required) {
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
  if (in_place_) {
    // Before the gather, whose stream waits for it; a comm that writes the own block anyway
    // (NCCL, MPI) needs none.
    if (shares(comm_, g.params)) copy_edge_pieces(index, whole);
    g.work = all_gather_others_async(comm_, mine, whole);
  } else {
    g.work = comm_.all_gather_async(mine, whole);
  }
}

// The bucket's parameters, gathered (now, unless prefetched), readable by later compute work and
// bound to its Variables.
void DataParallel::use_gathered(size_t index, bool pin) {
  launch_gather(index);
  Bucket& b = buckets_[index];
  Gathered& g = gathered_[static_cast<size_t>(b.gathered)];
  g.work.wait();
  g.work = CommWork();
  g.pinned = pin;
  g.used = ++clock_;
  bind_params(b, g.params, /*in_shard=*/in_place_);
}

void DataParallel::unpin(size_t index) {
  const int g = buckets_[index].gathered;
  if (g >= 0) gathered_[static_cast<size_t>(g)].pinned = false;
}

void DataParallel::forget_gathered() {
  for (Gathered& g : gathered_) {
    g.work.wait();
    g.work = CommWork();
    if (g.bucket >= 0) buckets_[static_cast<size_t>(g.bucket)].gathered = -1;
    g.bucket = -1;
    g.pinned = false;
  }
}

void DataParallel::gather_for_read(int unit) {
  const int i = options_.zero == 3 ? bucket_of_unit(unit) : -1;
  if (i >= 0) use_gathered(static_cast<size_t>(i), /*pin=*/false);
}

// ZeRO 3, after the update: the parameters outside the blocks all-gathered from the shard into
// their whole buffers; the blocks' gathered copies are stale now.
void DataParallel::gather_resident() {
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

// ZeRO 3: rank 0's parameters to every rank, one bucket at a time through a gathered buffer (no
// rank holds all of them), each rank keeping its slices.
void DataParallel::broadcast_sharded() {
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

int64_t DataParallel::staging_bytes() const {
  int64_t bytes = 0;
  for (const Staging& s : staging_) bytes += bytes_of(s.grads) + bytes_of(s.reduce) + bytes_of(s.landing);
  for (const Gathered& g : gathered_) bytes += bytes_of(g.params);
  for (const Bucket& b : buckets_) bytes += bytes_of(b.whole);
  return bytes;
}

}  // namespace nd::dist
