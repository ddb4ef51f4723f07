// TracingComm: a Comm that puts each collective on the timeline (--trace, tensor/op_trace.h) while
// a trace records: a span on this comm's track from the collective's start to its end, timed by
// CUDA events on the comm's own stream (NCCL; the start after the stream's wait for compute, so a
// span is the collective itself) or by the wall clock (host backends, which finish before they
// return). Its splits are TracingComms too, so wrapping the world before the grid is built traces
// every group. Outside a trace each call costs one test of a flag.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "dist/comm/forwarding_comm.h"

namespace nd::dist {

class TracingComm : public ForwardingComm {
 public:
  // `label` names the track ("world"; splits get "comm <k>" until relabelled).
  TracingComm(Comm& inner, std::string label);
  TracingComm(std::unique_ptr<Comm> inner, std::string label);

  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }

  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  CommWork all_gather_async(const Tensor& input, Tensor& output) override;
  CommWork broadcast_async(Tensor& buffer, int root) override;
  std::unique_ptr<Comm> split(int color, int key) override;
  // Runs `call` (a collective queued on the wrapped comm's stream by a decorator above this comm,
  // e.g. PeerComm's peer-memory kernels and copies) inside a span named `what` on this track.
  CommWork traced_call(const char* what, int64_t bytes, const std::function<CommWork()>& call);

 private:
  // Runs `call` inside a span named `what` on this comm's track.
  template <typename F>
  CommWork traced(const char* what, int64_t bytes, F call);

  std::string label_;
  int splits_ = 0;
};

}  // namespace nd::dist
