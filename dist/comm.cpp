// Shared argument checks and names for every Comm backend.
#include "dist/comm.h"

namespace nd::dist {

ReduceOp parse_reduce_op(const std::string& name) {
  if (name == "sum") return ReduceOp::Sum;
  if (name == "avg") return ReduceOp::Avg;
  if (name == "max") return ReduceOp::Max;
  ND_FAIL("unknown reduce op '" << name << "' (expected sum, avg or max)");
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

void check_comm_buffer(const Comm& comm, const Tensor& buffer, const char* what) {
  ND_CHECK(buffer.defined(), what << " is undefined");
  ND_CHECK(buffer.device() == comm.device(),
           what << " " << buffer.str() << " is not on the " << comm.backend() << " comm's device "
                << comm.device().str());
}

void check_reducible(const Tensor& buffer, const char* what) {
  ND_CHECK(buffer.dtype() == DType::F32 || buffer.dtype() == DType::BF16,
           what << " " << buffer.str() << ": reductions take f32 or bf16");
}

void check_peer(const Comm& comm, int peer, const char* what) {
  ND_CHECK(peer >= 0 && peer < comm.size(),
           what << ": peer " << peer << " is out of range for a comm of size " << comm.size());
}

void check_same_buffer_on_all_ranks(Comm& comm, const Tensor& buffer, const char* what) {
  if (comm.size() == 1) return;
  int64_t mine[4] = {buffer.numel(), -buffer.numel(), static_cast<int64_t>(buffer.dtype()),
                     -static_cast<int64_t>(buffer.dtype())};
  int64_t agreed[4] = {mine[0], mine[1], mine[2], mine[3]};
  comm.host_allreduce(agreed, 4, HostReduce::Max);
  int64_t largest = agreed[0], smallest = -agreed[1];
  ND_CHECK(largest == smallest, what << ": ranks pass different element counts (from " << smallest << " to "
                                     << largest << "; this rank " << buffer.numel() << ")");
  ND_CHECK(agreed[2] == -agreed[3], what << ": ranks pass different dtypes (this rank "
                                         << dtype_name(buffer.dtype()) << ")");
}

}  // namespace nd::dist
