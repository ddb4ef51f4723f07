// Shared argument checks and names for every Comm backend, the layout agreement between ranks,
// and CommWork (the one place that turns a comm-stream event into a compute-stream wait).
#include "dist/comm/comm.h"

#if NANODIST_WITH_CUDA
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

const char* collective_name(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "allreduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::Broadcast: return "broadcast";
    case Collective::RingAllReduce: return "ring_allreduce";
    case Collective::RingReduceScatter: return "ring_reduce_scatter";
    case Collective::RingAllGather: return "ring_all_gather";
    case Collective::AllToAll: return "all_to_all";
    case Collective::RingBroadcast: return "ring_broadcast";
    case Collective::RingAllToAll: return "ring_all_to_all";
    case Collective::PeerAllReduce: return "peer_allreduce";
    case Collective::PeerReduceScatter: return "peer_reduce_scatter";
    case Collective::PeerAllGather: return "peer_all_gather";
  }
  return "?";
}

void CommWork::wait() {
  if (!event_) return;
#if NANODIST_WITH_CUDA
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream(device_), static_cast<cudaEvent_t>(event_), 0));
#else
  ND_FAIL("a GPU CommWork in a build without CUDA");
#endif
  event_ = nullptr;
}

Comm::ScatterTicket Comm::reduce_scatter_send(const Tensor&, const Tensor&, ReduceOp) {
  ND_FAIL("reduce_scatter_send: this " << backend() << " comm has no two-half reduce-scatter (ask "
                                       << "reduce_scatter_in_halves first)");
}

CommWork Comm::reduce_scatter_finish(const ScatterTicket&, const Tensor&, Tensor&, ReduceOp) {
  ND_FAIL("reduce_scatter_finish: this " << backend() << " comm has no two-half reduce-scatter");
}

CommWork Comm::reduce_scatter_accumulate_async(const Tensor& input, Tensor& output, ReduceOp op) {
  ND_FAIL("reduce_scatter_accumulate: this " << backend() << " comm does not add a reduce-scatter into "
                                             << output.str() << " from " << input.str() << " with "
                                             << reduce_op_name(op) << " (ask reduce_scatter_accumulates first)");
}

void Comm::stream_copy(Tensor& dst, const Tensor& src) {
  check_comm_buffer(*this, dst, "stream_copy destination");
  check_comm_buffer(*this, src, "stream_copy source");
  ND_CHECK(dst.dtype() == src.dtype() && dst.numel() == src.numel(),
           "stream_copy: " << src.str() << " does not fit " << dst.str());
  dst.view({-1}).copy_from(src.view({-1}));
}

void check_comm_buffer(const Comm& comm, const Tensor& buffer, const char* what) {
  ND_CHECK(buffer.defined(), what << " is undefined");
  ND_CHECK(buffer.device() == comm.device(),
           what << " " << buffer.str() << " is not on the " << comm.backend() << " comm's device "
                << comm.device().str());
}

void check_reducible(const Tensor& buffer, const char* what) {
  ND_CHECK(buffer.dtype() == DType::F32 || buffer.dtype() == DType::BF16 || buffer.dtype() == DType::F16,
           what << " " << buffer.str() << ": reductions take f32, bf16 or f16");
}

void check_peer(const Comm& comm, int peer, const char* what) {
  ND_CHECK(peer >= 0 && peer < comm.size(),
           what << ": peer " << peer << " is out of range for a comm of size " << comm.size());
}

void check_all_to_all(const Comm& comm, const Tensor& input, const Tensor& output) {
  check_comm_buffer(comm, input, "all_to_all input");
  check_comm_buffer(comm, output, "all_to_all output");
  ND_CHECK(input.dtype() == output.dtype() && input.numel() == output.numel() && input.numel() % comm.size() == 0,
           "all_to_all: input " << input.str() << " and output " << output.str() << " must be of one dtype and "
                                << "one element count, a multiple of " << comm.size() << " ranks");
  ND_CHECK(input.numel() == 0 || input.raw_data() != output.raw_data(), "all_to_all: input and output overlap");
}

void Comm::agree_on_layout(Collective collective, const Tensor& buffer, int detail) {
  if (size() == 1) return;
  const std::array<int64_t, 4> layout = {static_cast<int64_t>(collective), detail, buffer.numel(),
                                         static_cast<int64_t>(buffer.dtype())};
  if (agreed_layouts_.count(layout)) return;
  const std::vector<RankRange> range = ranges_over_ranks(*this, {layout.begin(), layout.end()});
  auto same = [&](size_t i) { return range[i].same(); };
  const char* name = collective_name(collective);
  ND_CHECK(same(0), name << ": ranks call different collectives at this point (this rank " << name << ")");
  ND_CHECK(same(2), name << ": ranks pass different element counts (from " << range[2].min << " to " << range[2].max
                         << "; this rank " << buffer.numel() << ")");
  ND_CHECK(same(3), name << ": ranks pass different dtypes (this rank " << dtype_name(buffer.dtype()) << ")");
  if (collective == Collective::Broadcast || collective == Collective::RingBroadcast) {
    ND_CHECK(same(1), name << ": ranks pass different roots (this rank " << detail << ")");
  } else if (collective == Collective::RingAllReduce || collective == Collective::RingReduceScatter ||
             collective == Collective::RingAllGather) {
    ND_CHECK(same(1), name << ": ranks pass different reduce ops or ring pipelines (this rank "
                           << reduce_op_name(static_cast<ReduceOp>(detail % 16)) << ", " << detail / 16 % 16
                           << " pipe(s) of " << detail / 256 << " CTAs)");
  } else if (collective == Collective::PeerAllReduce) {
    ND_CHECK(same(1), name << ": ranks pass different reduce ops or peer algorithms (this rank "
                           << reduce_op_name(static_cast<ReduceOp>(detail % 16)) << ", "
                           << (detail / 16 == 0 ? "one-shot" : "two-shot") << ")");
  } else if (collective == Collective::AllToAll || collective == Collective::RingAllToAll) {
    ND_CHECK(same(1), name << ": ranks disagree on the call's detail (this rank " << detail << ")");
  } else {
    ND_CHECK(same(1), name << ": ranks pass different reduce ops (this rank "
                           << reduce_op_name(static_cast<ReduceOp>(detail)) << ")");
  }
  agreed_layouts_.insert(layout);
}

std::vector<RankRange> ranges_over_ranks(Comm& comm, const std::vector<int64_t>& values) {
  std::vector<int64_t> both;
  for (int64_t v : values) both.insert(both.end(), {v, -v});
  comm.host_allreduce(both.data(), static_cast<int>(both.size()), HostReduce::Max);
  std::vector<RankRange> ranges;
  for (size_t i = 0; i < values.size(); ++i) ranges.push_back({-both[2 * i + 1], both[2 * i]});
  return ranges;
}

}  // namespace nd::dist
