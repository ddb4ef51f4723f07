// The data-parallel engine: owns how the gradients of a model's flat buffers (dist/flat_params.h)
// become the same on every rank of the data-parallel group. Buckets are contiguous ranges of the
// flat gradient buffer (the first one small so communication starts early); a bucket is reduced
// (an `_async` collective, dist/comm.h) from the autograd hook of its last gradient, overlapping
// the rest of backward, and the compute stream waits only in finish_gradient_sync. With f32 main
// gradients the same hooks first add each micro-batch's bf16 gradients into them, bucket by
// bucket. The engine sees parameters, not a Module, and the group it is handed.
// Modes: all-reduce (DDP) today; ZeRO's reduce-scatter of ranges and gather of parameters plug
// in here, over the same buckets.
#pragma once
#include <string>
#include <vector>

#include "dist/comm.h"
#include "dist/flat_params.h"

namespace nd::dist {

struct DataParallelOptions {
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
};

class DataParallel {
 public:
  // `comm` (the grid's data-parallel group, native or ring; one rank: nothing is communicated) and `flat` on the
  // same device; both must outlive the engine, which hooks every parameter of `flat`.
  DataParallel(Comm& comm, FlatParams& flat, const DataParallelOptions& options = {});
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Copies the parameters of the group's rank 0 to its other ranks (one broadcast).
  void broadcast_parameters();

  // Before each backward of a step: `first` on the first micro-batch, `last` on the one whose
  // gradients are then reduced (the others only accumulate locally).
  void prepare_backward(bool first, bool last);

  // After the last backward: completes the buckets whose gradients never all became final
  // (unused parameters count as zero) and waits until every gradient holds the average over the
  // group (GPU: ordered before later compute-stream work; the host does not wait).
  void finish_gradient_sync();

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    size_t first = 0, last = 0;  // entries [first, last) of the layout
    int64_t begin = 0, length = 0;  // elements of the flat buffers
    int pending = 0;
    bool completed = false;      // its gradients are final for this micro-batch
    bool accumulated = false;    // it holds this step's gradients (separate grads)
    CommWork work;
  };

  void on_gradient_final(size_t entry);
  void complete(Bucket& bucket);

  Comm& comm_;
  FlatParams& flat_;
  DataParallelOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // entry -> bucket
  bool last_ = true;
};

}  // namespace nd::dist
