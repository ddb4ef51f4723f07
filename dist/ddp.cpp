// DDP: bucket layout, the gradient hooks that launch buckets, and the final wait. Ordering
// against compute is the Comm's business (dist/comm.h): nothing here knows about streams.
#include "dist/ddp.h"

namespace nd::dist {

DistributedDataParallel::DistributedDataParallel(Comm& comm, std::vector<Variable> params, const DDPOptions& options)
    : comm_(comm), params_(std::move(params)), options_(options), bucket_of_(params_.size()) {
  ND_CHECK(options.bucket_mb > 0 && options.first_bucket_mb > 0,
           "bucket sizes must be positive, got " << options.bucket_mb << " MB and " << options.first_bucket_mb << " MB");
  // Group in reverse order: the last parameters' gradients are final first in backward.
  std::vector<std::vector<size_t>> groups(1);
  double bytes = 0, cap = options.first_bucket_mb * 1e6;
  DType group_dtype = params_.empty() ? DType::F32 : params_.back().dtype();
  for (size_t k = params_.size(); k-- > 0;) {
    const Variable& p = params_[k];
    ND_CHECK(p.device() == comm.device(), "DDP parameter " << k << " is on " << p.device().str()
                                                            << ", the communicator on " << comm.device().str());
    double b = static_cast<double>(p.data().nbytes());
    if (!groups.back().empty() && (bytes + b > cap || p.dtype() != group_dtype)) {
      groups.emplace_back();
      bytes = 0;
      cap = options.bucket_mb * 1e6;
    }
    group_dtype = p.dtype();
    groups.back().push_back(k);
    bytes += b;
  }
  for (const auto& group : groups) {
    if (group.empty()) continue;
    Bucket bucket;
    int64_t numel = 0;
    for (size_t k : group) numel += params_[k].data().numel();
    bucket.flat = Tensor::zeros({numel}, params_[group.front()].dtype(), comm.device());
    int64_t offset = 0;
    for (size_t k : group) {
      Variable& p = params_[k];
      p.set_grad(bucket.flat.narrow(offset, p.data().numel()).view(p.shape()));
      offset += p.data().numel();
      bucket_of_[k] = buckets_.size();
      p.set_grad_hook([this, k](Variable&) { on_gradient_final(k); });
    }
    bucket.params = group;
    buckets_.push_back(std::move(bucket));
  }
}

void DistributedDataParallel::broadcast_parameters() {
  std::vector<CommWork> works;
  works.reserve(params_.size());
  for (Variable& p : params_) works.push_back(comm_.broadcast_async(p.data(), 0));
  for (CommWork& work : works) work.wait();
}

void DistributedDataParallel::prepare_backward(bool sync) {
  sync_ = sync;
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    b.launched = false;
    b.work = CommWork();
  }
}

void DistributedDataParallel::on_gradient_final(size_t param_index) {
  if (!sync_) return;
  Bucket& bucket = buckets_[bucket_of_[param_index]];
  if (--bucket.pending == 0) launch(bucket);
}

void DistributedDataParallel::launch(Bucket& bucket) {
  if (bucket.launched) return;
  bucket.launched = true;
  if (comm_.size() == 1) return;
  bucket.work = comm_.allreduce_async(bucket.flat, ReduceOp::Avg);
}

void DistributedDataParallel::finish_gradient_sync() {
  if (!sync_) return;
  // Buckets whose gradients never became final (unused parameters) still join the collective,
  // in bucket order, which every rank shares.
  for (Bucket& b : buckets_) launch(b);
  for (Bucket& b : buckets_) b.work.wait();
}

}  // namespace nd::dist
