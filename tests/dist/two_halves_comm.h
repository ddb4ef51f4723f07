// A comm whose reduce-scatter comes in two halves (as PeerComm's copy engines give it) on any
// backend, for the split linears' tests: send snapshots the input (what the caller has computed by
// then: every block but this rank's must be), finish puts this rank's block as it is by then into
// the snapshot and runs the wrapped comm's reduce-scatter on it. So a caller that computes another
// rank's block after send, or its own block after finish, gets a wrong sum.
#pragma once
#include "dist/forwarding_comm.h"

namespace nd::test {

class TwoHalvesComm : public dist::ForwardingComm {
 public:
  explicit TwoHalvesComm(dist::Comm& inner) : ForwardingComm(inner) {}

  bool reduce_scatter_in_halves(const Tensor&, dist::ReduceOp) override { return true; }
  ScatterTicket reduce_scatter_send(const Tensor& input, const Tensor&, dist::ReduceOp) override {
    snapshot_ = input.clone();
    return {++sends_};
  }
  dist::CommWork reduce_scatter_finish(const ScatterTicket& ticket, const Tensor& input, Tensor& output,
                                       dist::ReduceOp op) override {
    EXPECT_EQ(ticket.slot, sends_) << "finish must follow its own send";
    const int64_t n = output.numel();
    snapshot_.view({-1}).narrow(rank() * n, n).copy_from(input.view({-1}).narrow(rank() * n, n));
    return inner_.reduce_scatter_async(snapshot_, output, op);
  }

 private:
  Tensor snapshot_;
  int sends_ = 0;
};

}  // namespace nd::test
