// RingComm: a Comm whose all-reduce, reduce-scatter and all-gather are our ring
// (dist/comm/ring_allreduce.h) and whose broadcast and all-to-all are our chain and pairwise exchange
// (dist/comm/p2p_collectives.h), all built from the wrapped comm's send/recv; everything else (Max
// reductions, point-to-point, barrier, host values, faults) is the wrapped comm's.
// The parallel grid hands these out for `--collectives ring`, so callers never branch on the
// implementation. Same semantics and ordering contract (dist/comm/comm.h) as the native collectives.
#pragma once
#include <map>
#include <memory>

#include "dist/comm/comm.h"
#include "dist/comm/forwarding_comm.h"
#include "dist/comm/ring_allreduce.h"

namespace nd::dist {

class RingComm : public ForwardingComm {
 public:
  // Wraps `inner`, which must outlive this comm; or owns it.
  explicit RingComm(Comm& inner, const RingOptions& options = {});
  explicit RingComm(std::unique_ptr<Comm> inner, const RingOptions& options = {});
  // Waits for the wrapped comm's queued work before the staging buffers go back to the allocator.
  ~RingComm() override;

  const RingOptions& options() const { return options_; }

  // Sum and Avg: the ring in place. Max: the wrapped comm's.
  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  // input (size() * n) -> output (n). Sum and Avg: the input is copied into a staging buffer
  // (the ring reduces in place, and the input stays untouched as the native call leaves it),
  // reduced there, and block rank() (the ring's chunk rank(): n divides the count) is copied
  // into output. Max: the wrapped comm's.
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  // input (n) -> output (size() * n): input is copied into block rank() of output, then the
  // ring's all-gather fills the other blocks in place. Any dtype (it moves bytes).
  CommWork all_gather_async(const Tensor& input, Tensor& output) override;
  // The chain broadcast (direct send for small buffers) and the pairwise all-to-all.
  CommWork broadcast_async(Tensor& buffer, int root) override;
  CommWork all_to_all_async(const Tensor& input, Tensor& output) override;
  // A RingComm around the wrapped comm's split, with the same options.
  std::unique_ptr<Comm> split(int color, int key) override;

 private:
  // A buffer of `numel` elements of `dtype` for the reduce-scatter's input, reused across calls
  // (one per dtype; used only on the wrapped comm's stream, so calls in order never race).
  Tensor staging(int64_t numel, DType dtype);

  RingOptions options_;
  std::map<DType, Tensor> staging_;
};

}  // namespace nd::dist
