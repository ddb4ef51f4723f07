// LocalComm: a communicator of one rank, for runs started without mpirun. Collectives are
// identities (the sum over one rank is the buffer itself); send/recv to self pair up in order.
#pragma once
#include <deque>
#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

class LocalComm : public Comm {
 public:
  explicit LocalComm(Device device = Device::cpu()) : device_(device) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  Device device() const override { return device_; }
  const char* backend() const override { return "local"; }

  void send(const Tensor& buffer, int peer) override;
  void recv(Tensor& buffer, int peer) override;
  void group_start() override;
  void post_group() override;
  void wait_posted() override {}

  // Complete on return: identities, or one stream-ordered copy on the compute stream.
  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  CommWork all_gather_async(const Tensor& input, Tensor& output) override;
  CommWork broadcast_async(Tensor& buffer, int root) override;
  CommWork all_to_all_async(const Tensor& input, Tensor& output) override;
  void barrier() override {}
  std::unique_ptr<Comm> split(int color, int key) override;

  void synchronize() override {}
  void host_allreduce(int64_t*, int, HostReduce) override {}
  void host_allreduce(double*, int, HostReduce) override {}

 private:
  void deliver_pending();

  Device device_;
  int group_depth_ = 0;
  std::deque<Tensor> sent_;          // copies of sends to self, waiting for their recv
  std::vector<Tensor> waiting_recvs_;  // recvs posted inside the open group
};

}  // namespace nd::dist
