// Data parallelism: gradients are averaged over ranks in buckets. Each parameter's gradient is a
// view into its bucket's flat buffer, so backward kernels accumulate straight into what gets
// reduced (no copies). Buckets follow reverse parameter order (the order backward finishes
// gradients), the first one small so communication starts early; a bucket's all-reduce is
// launched (an `_async` collective, dist/comm.h) from the autograd hook of its last gradient,
// overlapping the rest of backward; the compute stream waits for the buckets only in
// finish_gradient_sync. DDP sees a list of parameters, not a Module, and a communicator: the
// data-parallel one of the grid (dist/parallel_grid.h), which need not span the world.
#pragma once
#include <vector>

#include "autograd/variable.h"
#include "dist/comm.h"

namespace nd::dist {

struct DDPOptions {
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
};

class DistributedDataParallel {
 public:
  // `params` in forward (registration) order; all on comm.device(). Gradients are averaged over
  // the ranks of `comm` (the data-parallel comm), which must outlive this object.
  DistributedDataParallel(Comm& comm, std::vector<Variable> params, const DDPOptions& options = {});

  // Copies the parameters of the comm's rank 0 to its other ranks.
  void broadcast_parameters();

  // Call before each backward: with sync = false (the non-final micro-steps of gradient
  // accumulation) gradients only accumulate locally.
  void prepare_backward(bool sync);

  // Call after the last backward of a step: launches any bucket still pending and waits until
  // every gradient holds the average over ranks (on the GPU: ordered before later compute-stream
  // work; the host does not wait).
  void finish_gradient_sync();

 private:
  struct Bucket {
    Tensor flat;
    std::vector<size_t> params;  // indices into params_
    int pending = 0;
    bool launched = false;
    CommWork work;  // the bucket's all-reduce in flight
  };

  void on_gradient_final(size_t param_index);
  void launch(Bucket& bucket);

  Comm& comm_;
  std::vector<Variable> params_;
  DDPOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // param index -> bucket index
  bool sync_ = true;
};

}  // namespace nd::dist
