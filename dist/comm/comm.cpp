// Shared argument checks and names for every Comm backend, the layout agreement between ranks,
// and CommWork (the one place that turns a comm-stream event into a compute-stream wait).
#include "dist/comm/comm.h"

#include <string>

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

Algorithm parse_algorithm(const std::string& name) {
  for (Algorithm a : {Algorithm::Native, Algorithm::Ring, Algorithm::Hierarchical, Algorithm::OneShot,
                      Algorithm::TwoShot, Algorithm::Push, Algorithm::Peer, Algorithm::Auto})
    if (name == algorithm_name(a)) return a;
  ND_FAIL_INPUT("unknown collective algorithm '" << name
                                                 << "' (expected native, ring, hierarchical, oneshot, twoshot, push, "
                                                    "peer or auto)");
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::Native: return "native";
    case Algorithm::Ring: return "ring";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::OneShot: return "oneshot";
    case Algorithm::TwoShot: return "twoshot";
    case Algorithm::Push: return "push";
    case Algorithm::Peer: return "peer";
    case Algorithm::Auto: return "auto";
  }
  return "?";
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return "allreduce";
    case CollectiveOp::ReduceScatter: return "reduce_scatter";
    case CollectiveOp::AllGather: return "all_gather";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::AllToAll: return "all_to_all";
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

void check_reduce_scatter(const Comm& comm, const Tensor& input, const Tensor& output) {
  check_comm_buffer(comm, input, "reduce_scatter input");
  check_comm_buffer(comm, output, "reduce_scatter output");
  ND_CHECK(input.dtype() == output.dtype() && input.numel() == output.numel() * comm.size(),
           "reduce_scatter: input " << input.str() << " must hold " << comm.size() << " x output " << output.str());
}

void check_all_gather(const Comm& comm, const Tensor& input, const Tensor& output) {
  check_comm_buffer(comm, input, "all_gather input");
  check_comm_buffer(comm, output, "all_gather output");
  ND_CHECK(input.dtype() == output.dtype() && output.numel() == input.numel() * comm.size(),
           "all_gather: output " << output.str() << " must hold " << comm.size() << " x input " << input.str());
}

void check_all_to_all(const Comm& comm, const Tensor& input, const Tensor& output) {
  check_comm_buffer(comm, input, "all_to_all input");
  check_comm_buffer(comm, output, "all_to_all output");
  ND_CHECK(input.dtype() == output.dtype() && input.numel() == output.numel() && input.numel() % comm.size() == 0,
           "all_to_all: input " << input.str() << " and output " << output.str() << " must be of one dtype and "
                                << "one element count, a multiple of " << comm.size() << " ranks");
  ND_CHECK(input.numel() == 0 || input.raw_data() != output.raw_data(), "all_to_all: input and output overlap");
}

void Comm::agree_on_layout(CollectiveOp op, Algorithm algorithm, const Tensor& buffer, int detail) {
  if (size() == 1) return;
  const std::array<int64_t, 4> layout = {static_cast<int64_t>(op) * 16 + static_cast<int64_t>(algorithm), detail,
                                         buffer.numel(), static_cast<int64_t>(buffer.dtype())};
  if (agreed_layouts_.count(layout)) return;
  const std::vector<RankRange> range = ranges_over_ranks(*this, {layout.begin(), layout.end()});
  auto same = [&](size_t i) { return range[i].same(); };
  const std::string name = algorithm == Algorithm::Native
                               ? std::string(collective_op_name(op))
                               : std::string(collective_op_name(op)) + " (" + algorithm_name(algorithm) + ")";
  ND_CHECK(same(0), name << ": ranks call different collectives at this point (this rank " << name << ")");
  ND_CHECK(same(2), name << ": ranks pass different element counts (from " << range[2].min << " to " << range[2].max
                         << "; this rank " << buffer.numel() << ")");
  ND_CHECK(same(3), name << ": ranks pass different dtypes (this rank " << dtype_name(buffer.dtype()) << ")");
  if (op == CollectiveOp::Broadcast) {
    ND_CHECK(same(1), name << ": ranks pass different roots (this rank " << detail << ")");
  } else if (op == CollectiveOp::AllToAll || op == CollectiveOp::AllGather) {
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
