// A comm whose reduce-scatter comes in two halves (as PeerComm's copy engines give it) on any
// backend, for the split linears' tests: send snapshots the input (what the caller has computed by
// then: every block but this rank's must be), finish puts this rank's block as it is by then into
// the snapshot and runs the wrapped comm's reduce-scatter on it. So a caller that computes another
// rank's block after send, or its own block after finish, gets a wrong sum.
// Its all-gathers are PeerComm's too: all_gather_others_async leaves NaN in this rank's block, and
// gather_scratch lends a pooled buffer (full of NaN) only while no tensor views it. So a caller
// that reads its own block from such a gather, or a whole it has let go, gets NaN or a wrong sum.
#pragma once
#include <cmath>
#include <vector>

#include "dist/comm/forwarding_comm.h"
#include "dist/comm/peer_memory.h"

namespace nd::test {

class TwoHalvesComm : public dist::ForwardingComm, public dist::PeerMemory {
 public:
  explicit TwoHalvesComm(dist::Comm& inner) : ForwardingComm(inner) {}

  dist::PeerMemory* peer_memory() override { return this; }

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
  dist::CommWork all_gather_others_async(const Tensor& input, Tensor& output) override {
    inner_.all_gather_async(input, output).wait();  // the NaN below lands after the gather
    const int64_t n = input.numel();
    output.view({-1}).narrow(rank() * n, n).fill_(std::nan(""));
    return {};
  }
  Tensor gather_scratch(const Shape& shape, DType dtype) override {
    const int64_t n = shape_numel(shape);
    for (const Tensor& t : scratch_) {
      if (t.storage().use_count() == 1 && t.dtype() == dtype && t.numel() == n) {
        Tensor lent = t.view(shape);
        lent.fill_(std::nan(""));
        return lent;
      }
    }
    scratch_.push_back(Tensor::empty({n}, dtype, device()));
    scratch_.back().fill_(std::nan(""));
    return scratch_.back().view(shape);
  }
  // The rest as a comm without peer memory.
  Tensor shared_tensor(const Shape& shape, DType dtype) override { return Tensor::zeros(shape, dtype, device()); }
  bool shares(const Tensor&) const override { return false; }
  bool reduce_scatter_widens(dist::ReduceOp) override { return false; }
  bool reduce_scatter_accumulates(dist::ReduceOp, DType, DType) override { return false; }
  dist::CommWork reduce_scatter_accumulate_async(const Tensor&, Tensor&, dist::ReduceOp) override {
    ND_FAIL("TwoHalvesComm does not accumulate");
  }

 private:
  Tensor snapshot_;
  int sends_ = 0;
  std::vector<Tensor> scratch_;  // gather_scratch's buffers, flat
};

}  // namespace nd::test
