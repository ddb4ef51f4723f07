// The spans of TracingComm: the comm's stream where it has one (NCCL), else the wall clock.
#include "dist/comm/tracing_comm.h"

#include <cstdio>

#include "dist/comm/nccl_comm.h"
#include "tensor/op_trace.h"

namespace nd::dist {
namespace {

// "allreduce 1.50 MB"
std::string span_name(const char* what, int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s %.2f MB", what, static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

TracingComm::TracingComm(Comm& inner, std::string label) : ForwardingComm(inner), label_(std::move(label)) {}
TracingComm::TracingComm(std::unique_ptr<Comm> inner, std::string label)
    : ForwardingComm(std::move(inner)), label_(std::move(label)) {}

template <typename F>
CommWork TracingComm::traced(const char* what, int64_t bytes, F call) {
  if (!op_timer::tracing()) return call();
  void* stream = nullptr;
#if NANODIST_WITH_CUDA
  if (auto* nccl = find_below<NcclComm>(inner_)) {
    inner_.order_after_compute();  // the span starts when the collective can, not before its inputs
    stream = nccl->stream();
  }
#endif
  op_timer::Span span(span_name(what, bytes), label_, stream, device().is_cuda() ? device().index : -1);
  return call();
}

CommWork TracingComm::allreduce_async(Tensor& buffer, ReduceOp op) {
  return traced("allreduce", static_cast<int64_t>(buffer.nbytes()), [&] { return inner_.allreduce_async(buffer, op); });
}

CommWork TracingComm::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) {
  return traced("reduce_scatter", static_cast<int64_t>(input.nbytes()),
                [&] { return inner_.reduce_scatter_async(input, output, op); });
}

CommWork TracingComm::all_gather_async(const Tensor& input, Tensor& output) {
  return traced("all_gather", static_cast<int64_t>(output.nbytes()),
                [&] { return inner_.all_gather_async(input, output); });
}

CommWork TracingComm::broadcast_async(Tensor& buffer, int root) {
  return traced("broadcast", static_cast<int64_t>(buffer.nbytes()), [&] { return inner_.broadcast_async(buffer, root); });
}

CommWork TracingComm::traced_call(const char* what, int64_t bytes, const std::function<CommWork()>& call) {
  return traced(what, bytes, call);
}

std::unique_ptr<Comm> TracingComm::split(int color, int key) {
  return std::make_unique<TracingComm>(inner_.split(color, key), label_ + "/" + std::to_string(++splits_));
}

}  // namespace nd::dist
