// LocalComm: one rank. Sends to self are copied and matched to recvs in posting order.
#include "dist/comm/local_comm.h"

namespace nd::dist {

void LocalComm::send(const Tensor& buffer, int peer) {
  check_comm_buffer(*this, buffer, "send buffer");
  check_peer(*this, peer, "send");
  sent_.push_back(buffer.clone());
}

void LocalComm::recv(Tensor& buffer, int peer) {
  check_comm_buffer(*this, buffer, "recv buffer");
  check_peer(*this, peer, "recv");
  waiting_recvs_.push_back(buffer);
  if (group_depth_ == 0) deliver_pending();
}

void LocalComm::group_start() { ++group_depth_; }

void LocalComm::post_group() {
  ND_CHECK(group_depth_ > 0, "group end without a group start");
  if (--group_depth_ == 0) deliver_pending();
}

void LocalComm::deliver_pending() {
  std::vector<Tensor> targets;
  targets.swap(waiting_recvs_);  // cleared even when a check below throws
  for (Tensor& target : targets) {
    ND_CHECK(!sent_.empty(), "recv from self with no matching send (rank 0 of 1)");
    Tensor source = sent_.front();
    sent_.pop_front();
    ND_CHECK(source.numel() == target.numel() && source.dtype() == target.dtype(),
             "recv of " << target.str() << " matched a send of " << source.str());
    target.copy_from(source.view(target.shape()));
  }
}

CommWork LocalComm::allreduce_async(Tensor& buffer, ReduceOp) {
  check_comm_buffer(*this, buffer, "allreduce buffer");
  check_reducible(buffer, "allreduce buffer");
  return CommWork();
}

CommWork LocalComm::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp) {
  check_reduce_scatter(*this, input, output);
  check_reducible(input, "reduce_scatter input");
  output.copy_from(input.view(output.shape()));
  return CommWork();
}

CommWork LocalComm::all_gather_async(const Tensor& input, Tensor& output) {
  check_all_gather(*this, input, output);
  output.copy_from(input.view(output.shape()));
  return CommWork();
}

CommWork LocalComm::broadcast_async(Tensor& buffer, int root) {
  check_comm_buffer(*this, buffer, "broadcast buffer");
  check_peer(*this, root, "broadcast root");
  return CommWork();
}

CommWork LocalComm::all_to_all_async(const Tensor& input, Tensor& output) {
  check_all_to_all(*this, input, output);
  output.copy_from(input.view(output.shape()));
  return CommWork();
}

std::unique_ptr<Comm> LocalComm::split(int color, int) {
  ND_CHECK(color >= 0, "split: color " << color << " must be >= 0");
  return std::make_unique<LocalComm>(device_);
}

}  // namespace nd::dist
