// FullyShardedDataParallel's gradients: one bucket per segment of the flat layout, the staging
// buffers that a block's backward writes its gradients into, and their reduce-scatter into the f32
// shard, micro-batch by micro-batch. ZeRO 3's parameter shard and gathers are in
// fully_sharded_params.cpp.
#include "dist/parallel/fully_sharded_data_parallel.h"

#include <algorithm>

#include "dist/comm/peer_memory.h"

namespace nd::dist {

namespace {

// Staging buffers shared by the blocks' gradients. Two suffice: when block i's backward starts,
// block i + 1's gradients are final and their reduce-scatter launched, so i takes the buffer of
// i + 2, whose reduce-scatter the compute stream waits for (on the GPU an event, not the host).
constexpr int kPooled = 2;

int64_t bytes_of(const Tensor& t) { return t.defined() ? t.numel() * static_cast<int64_t>(dtype_size(t.dtype())) : 0; }

}  // namespace

// Pooled staging for the blocks, a buffer of its own (bound for good) for each bucket outside them.
FullyShardedDataParallel::FullyShardedDataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options)
    : comm_(comm), flat_(flat), shard_params_(options.zero == 3), hold_(options.hold_units) {
  check_data_parallel(comm, flat, options);
  ND_CHECK(options.zero >= 2, "FullyShardedDataParallel runs ZeRO 2 and 3, not " << options.zero);
  const int n = comm.size();
  const std::vector<BucketRange> plan = unit_buckets(flat, n);
  owned_ = owned_slices(plan, comm.rank(), n);
  int64_t pooled_length = 0;
  for (const BucketRange& range : plan) {
    if (range.unit >= 0) {
      if (static_cast<size_t>(range.unit) >= bucket_of_unit_.size()) bucket_of_unit_.resize(range.unit + 1, -1);
      ND_CHECK(bucket_of_unit_[range.unit] < 0, "ZeRO: unit " << range.unit << " is not one contiguous run of the layout");
      bucket_of_unit_[range.unit] = static_cast<int>(buckets_.size());
      first_unit_ = first_unit_ < 0 ? range.unit : std::min(first_unit_, range.unit);
      pooled_length = std::max(pooled_length, range.length);
    }
    buckets_.emplace_back(range);
  }
  // Every micro-batch lands in the f32 shard: the first directly (f32 gradients, or bf16 ones the
  // comm widens), later ones straight too where the comm adds a reduce-scatter into its output
  // (accumulate_), else (and other bf16 ones) beside their staging buffer first (Staging::landing).
  shard_numel_ = flat.numel() / n;
  shard_grads_ = Tensor::zeros({shard_numel_}, DType::F32, flat.device());
  // Where the comm reduce-scatters bf16 into f32 itself, a block's bf16 gradients need no f32 copy
  // under f32 main gradients (a pass over 6 bytes an element on the compute stream, and twice the
  // bytes on the wire), and under bf16 ones the first micro-batch's land in the f32 shard directly,
  // summed in f32 and never rounded to bf16 (no landing place, no pass to add it into the shard).
  widen_ = flat.param_dtype() == DType::BF16 &&
           (flat.grad_dtype() == DType::F32 || flat.grad_dtype() == DType::BF16) && flat.device().is_cuda() &&
           reduce_scatter_widens(comm, ReduceOp::Avg);
  // Where the comm also adds a reduce-scatter into the f32 shard, later micro-batches skip the landing
  // place: no write and read back of 1/dp of the block in the gradient dtype per micro-batch, no
  // pass on the compute stream, and bf16 gradients' partial sums stay in f32 rather than being
  // rounded to bf16 between micro-batches.
  accumulate_ = first_into_shard() && reduce_scatter_accumulates(comm, ReduceOp::Avg, reduced_dtype(), DType::F32);
  if (pooled_length > 0 && !hold_)
    for (int i = 0; i < kPooled; ++i) make_staging(pooled_length);
  for (Bucket& b : buckets_)
    if (b.unit < 0 || hold_) {
      make_staging(b.length);
      bind(b, static_cast<int>(staging_.size()) - 1);
    }
  if (shard_params_) shard_parameters(pooled_length);
  hooks_.install(flat, plan, [this](size_t bucket) { complete(bucket); });
}

void FullyShardedDataParallel::make_staging(int64_t length) {
  Staging s;
  s.grads = Tensor::zeros({length}, flat_.param_dtype(), flat_.device());
  if (flat_.separate_grads() && !widen_) s.reduce = Tensor::zeros({length}, DType::F32, flat_.device());
  if (!accumulate_) s.landing = Tensor::zeros({length / comm_.size()}, flat_.grad_dtype(), flat_.device());
  staging_.push_back(std::move(s));
}

DType FullyShardedDataParallel::reduced_dtype() const {
  return flat_.separate_grads() && !widen_ ? DType::F32 : flat_.param_dtype();
}

bool FullyShardedDataParallel::first_into_shard() const { return flat_.grad_dtype() == DType::F32 || widen_; }

int FullyShardedDataParallel::bucket_of_unit(int unit) const {
  if (unit < 0 || static_cast<size_t>(unit) >= bucket_of_unit_.size()) return -1;
  return bucket_of_unit_[static_cast<size_t>(unit)];
}

void FullyShardedDataParallel::broadcast_parameters() {
  if (shard_params_) return broadcast_sharded();
  if (comm_.size() > 1) comm_.broadcast(flat_.params(), 0);
}

void FullyShardedDataParallel::prepare_backward(bool first, bool /*last*/) {
  // The previous micro-batch's gradients go into the shard, a bucket left incomplete (an unused
  // parameter) too, in bucket order on every rank; the staging buffers start over.
  if (!first) {
    reduce_remaining();
    drain_into_shard();
    flat_.zero_grad();
  }
  next_pooled_ = 0;  // the same buffers for the same blocks every micro-batch (a CUDA graph replays them)
  if (first) shard_filled_ = false;
  hooks_.start();
  for (Bucket& b : buckets_) b.work = CommWork();
}

void FullyShardedDataParallel::finish_gradient_sync() {
  reduce_remaining();
  drain_into_shard();
}

// Held buckets go out all together, in bucket order on every rank, when gradients came since the last
// time. A deferred weight gradient comes after its unit's backward, whose hooks said so, and before
// the schedule's last prepare_backward (train/pipeline_schedule.cpp), which therefore reduces it; the
// finish after that finds nothing new and sends nothing.
void FullyShardedDataParallel::reduce_remaining() {
  if (!hold_) return hooks_.complete_all();
  if (!held_) return;
  for (size_t i = 0; i < buckets_.size(); ++i) reduce(i);
  held_ = false;
}

void FullyShardedDataParallel::gather_parameters() {
  if (shard_params_) return gather_resident();
  all_gather_owned(comm_, flat_.params(), owned_);
}

// Points the bucket's parameters' gradients into staging buffer `index`, as "no contribution yet"
// (a gradient written before the binding, into a buffer of its own, is carried over).
void FullyShardedDataParallel::bind(Bucket& bucket, int index) {
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

void FullyShardedDataParallel::bind_next_pooled(Bucket& bucket) {
  bind(bucket, next_pooled_);
  next_pooled_ = (next_pooled_ + 1) % kPooled;
}

// Orders later compute after the buffer's last reduce-scatter, and adds a result that landed beside
// it into the shard.
void FullyShardedDataParallel::flush(Staging& s) {
  s.work.wait();
  s.work = CommWork();
  if (s.pending < 0) return;
  const Bucket& b = buckets_[static_cast<size_t>(s.pending)];
  const int64_t slice = b.length / comm_.size();
  Tensor dst = shard_grads_.narrow(b.local, slice);
  accumulate_into_f32(s.landing.narrow(0, slice), dst, s.overwrite);
  s.pending = -1;
}

void FullyShardedDataParallel::before_backward(int unit) {
  const int i = bucket_of_unit(unit);
  if (i < 0) return;
  Bucket& b = buckets_[static_cast<size_t>(i)];
  if (shard_params_) {
    use_gathered(static_cast<size_t>(i), /*pin=*/true);
    const int previous = bucket_of_unit(unit - 1), earlier = bucket_of_unit(unit - 2);
    if (previous >= 0) launch_gather(static_cast<size_t>(previous));
    // Queued now, before this block's reduce-scatter, so it waits only for the one already queued.
    if (earlier >= 0) launch_gather(static_cast<size_t>(earlier), /*required=*/false);
  }
  if (b.staging < 0) bind_next_pooled(b);
}

// A bucket's gradients are final for this micro-batch (its hooks all fired, or complete_all): reduced
// now, or with hold_units at the next reduce_remaining (only the gathered parameters of a ZeRO 3
// block are free now: their last reader, this backward, has run).
void FullyShardedDataParallel::complete(size_t index) {
  if (!hold_) return reduce(index);
  held_ = true;
  unpin(index);
}

// The bucket's staging buffer, every gradient in it (zeros where none came), reduce-scattered into
// the shard; a pooled buffer is then free for the next block once that reduce-scatter is done, and
// (ZeRO 3) the block's gathered parameters once their last reader, this backward, has run.
void FullyShardedDataParallel::reduce(size_t index) {
  Bucket& bucket = buckets_[index];
  if (bucket.staging < 0) bind_next_pooled(bucket);  // a block whose backward never started: zeros
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
  if (bucket.unit < 0 || hold_) return;  // its own buffer: stays bound
  for (size_t k = bucket.first; k < bucket.last; ++k) {
    Variable param = entries[k].param;
    param.clear_grad();
  }
  bucket.staging = -1;
  unpin(index);
}

// The reduce-scatter of a micro-batch's staged gradients (`input`, the bucket's length) into the
// bucket's shard slice: overwriting it on the first micro-batch, adding to it on later ones where the
// comm accumulates, else through the landing place (added in by flush). The comm's stream writes the
// slice, in call order with the earlier micro-batches' reduce-scatters into it; nothing else touches
// it until finish_gradient_sync waits for the bucket's work.
CommWork FullyShardedDataParallel::scatter_into_shard(Bucket& bucket, Staging& s, const Tensor& input) {
  const int64_t slice = bucket.length / comm_.size();
  Tensor shard = shard_grads_.narrow(bucket.local, slice);
  if (first_into_shard() && !shard_filled_) return comm_.reduce_scatter_async(input, shard, ReduceOp::Avg);
  if (accumulate_) return comm_.peer_memory()->reduce_scatter_accumulate_async(input, shard, ReduceOp::Avg);
  Tensor out = s.landing.narrow(0, slice);
  s.pending = static_cast<int>(&bucket - buckets_.data());
  s.overwrite = !shard_filled_;
  return comm_.reduce_scatter_async(input, out, ReduceOp::Avg);
}

void FullyShardedDataParallel::drain_into_shard() {
  for (Bucket& b : buckets_) {
    b.work.wait();
    b.work = CommWork();
  }
  for (Staging& st : staging_) flush(st);
  shard_filled_ = true;
}

int64_t FullyShardedDataParallel::buffer_bytes() const {
  return bytes_of(shard_grads_) + bytes_of(param_shard_) + staging_bytes();
}

int64_t FullyShardedDataParallel::staging_bytes() const {
  int64_t bytes = 0;
  for (const Staging& s : staging_) bytes += bytes_of(s.grads) + bytes_of(s.reduce) + bytes_of(s.landing);
  for (const Gathered& g : gathered_) bytes += bytes_of(g.params);
  for (const Bucket& b : buckets_) bytes += bytes_of(b.whole);
  return bytes;
}

}  // namespace nd::dist
