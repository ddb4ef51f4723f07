// ForwardingComm: a Comm that passes every call to a wrapped comm. Decorators (RingComm, the
// hierarchical all-reduce, test doubles that count calls) derive from it and override only what
// they change, so a call added to Comm is forwarded once, here.
#pragma once
#include <memory>
#include <string>

#include "dist/comm/comm.h"

namespace nd::dist {

class ForwardingComm : public Comm {
 public:
  // Wraps `inner`, which must outlive this comm; or owns it.
  explicit ForwardingComm(Comm& inner) : inner_(inner) {}
  explicit ForwardingComm(std::unique_ptr<Comm> inner) : owned_(std::move(inner)), inner_(*owned_) {}
  ForwardingComm(const ForwardingComm&) = delete;
  ForwardingComm& operator=(const ForwardingComm&) = delete;

  Comm& inner() const { return inner_; }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Device device() const override { return inner_.device(); }
  const char* backend() const override { return inner_.backend(); }

  void send(const Tensor& buffer, int peer) override { inner_.send(buffer, peer); }
  void recv(Tensor& buffer, int peer) override { inner_.recv(buffer, peer); }
  void group_start() override { inner_.group_start(); }
  void post_group() override { inner_.post_group(); }
  void wait_posted() override { inner_.wait_posted(); }

  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override { return inner_.allreduce_async(buffer, op); }
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override {
    return inner_.reduce_scatter_async(input, output, op);
  }
  CommWork all_gather_async(const Tensor& input, Tensor& output) override {
    return inner_.all_gather_async(input, output);
  }
  CommWork broadcast_async(Tensor& buffer, int root) override { return inner_.broadcast_async(buffer, root); }
  CommWork all_to_all_async(const Tensor& input, Tensor& output) override {
    return inner_.all_to_all_async(input, output);
  }
  void barrier() override { inner_.barrier(); }
  std::unique_ptr<Comm> split(int color, int key) override { return inner_.split(color, key); }

  void synchronize() override { inner_.synchronize(); }
  void host_allreduce(int64_t* values, int n, HostReduce op) override { inner_.host_allreduce(values, n, op); }
  void host_allreduce(double* values, int n, HostReduce op) override { inner_.host_allreduce(values, n, op); }
  std::string async_error() override { return inner_.async_error(); }
  void abort() override { inner_.abort(); }
  void order_after_compute() override { inner_.order_after_compute(); }
  CommWork record_work() override { return inner_.record_work(); }
  void stream_copy(Tensor& dst, const Tensor& src) override { inner_.stream_copy(dst, src); }
  // peer_memory() is not forwarded: a decorator that replaces the all-gather or reduce-scatter (the
  // ring) must not hand out the wrapped comm's variants of them. One that keeps them may.

 private:
  std::unique_ptr<Comm> owned_;  // empty when `inner_` is the caller's

 protected:
  Comm& inner_;
};

// `comm` itself if it is a T, else the first T among the comms it wraps (through ForwardingComm
// decorators), else nullptr: e.g. the NcclComm under a TracingComm, whose stream a decorator above
// both queues its own work on.
template <typename T>
T* find_below(Comm& comm) {
  for (Comm* c = &comm;;) {
    if (auto* found = dynamic_cast<T*>(c)) return found;
    auto* forwarding = dynamic_cast<ForwardingComm*>(c);
    if (!forwarding) return nullptr;
    c = &forwarding->inner();
  }
}

}  // namespace nd::dist
