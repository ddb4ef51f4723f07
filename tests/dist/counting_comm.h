// A test double that records every device collective and point-to-point call (what, over how many
// ranks, how many bytes) of a comm and of every comm split from it, into one shared log, and
// forwards the call. Host values are not recorded.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "dist/comm/forwarding_comm.h"

namespace nd::test {

// (op, group size, bytes) -> calls. Bytes: the buffer (all-reduce, broadcast), the input
// (reduce-scatter, all-to-all), the output (all-gather), the message (send, recv).
using CallLog = std::map<std::tuple<std::string, int, int64_t>, int64_t>;

class CountingComm : public dist::ForwardingComm {
 public:
  CountingComm(dist::Comm& inner, std::shared_ptr<CallLog> log) : ForwardingComm(inner), log_(std::move(log)) {}
  CountingComm(std::unique_ptr<dist::Comm> inner, std::shared_ptr<CallLog> log)
      : ForwardingComm(std::move(inner)), log_(std::move(log)) {}

  void send(const Tensor& buffer, int peer) override {
    note("send", buffer.nbytes());
    inner_.send(buffer, peer);
  }
  void recv(Tensor& buffer, int peer) override {
    note("recv", buffer.nbytes());
    inner_.recv(buffer, peer);
  }
  dist::CommWork allreduce_async(Tensor& buffer, dist::ReduceOp op) override {
    note("allreduce", buffer.nbytes());
    return inner_.allreduce_async(buffer, op);
  }
  dist::CommWork reduce_scatter_async(const Tensor& input, Tensor& output, dist::ReduceOp op) override {
    note("reducescatter", input.nbytes());
    return inner_.reduce_scatter_async(input, output, op);
  }
  dist::CommWork all_gather_async(const Tensor& input, Tensor& output) override {
    note("allgather", output.nbytes());
    return inner_.all_gather_async(input, output);
  }
  dist::CommWork broadcast_async(Tensor& buffer, int root) override {
    note("broadcast", buffer.nbytes());
    return inner_.broadcast_async(buffer, root);
  }
  dist::CommWork all_to_all_async(const Tensor& input, Tensor& output) override {
    note("alltoall", input.nbytes());
    return inner_.all_to_all_async(input, output);
  }
  std::unique_ptr<dist::Comm> split(int color, int key) override {
    return std::make_unique<CountingComm>(inner_.split(color, key), log_);
  }

 private:
  void note(const char* op, size_t bytes) { ++(*log_)[{op, size(), static_cast<int64_t>(bytes)}]; }
  std::shared_ptr<CallLog> log_;
};

}  // namespace nd::test
