// MpiComm: point-to-point through nonblocking Isend/Irecv (a group posts all its operations,
// then waits), collectives through MPI's own. Every collective first agrees on its layout with
// the other ranks (Comm::agree_on_layout), so a mismatch raises on every rank instead of hanging.
#include "dist/comm/mpi_comm.h"

#include <climits>
#include <cstring>
#include <vector>

#include "dist/comm/mpi_check.h"
#include "kernels/cpu/reduce.h"

namespace nd::dist {

namespace {

constexpr int kPointToPointTag = 7;

// inout[i] = in[i] + inout[i] for bf16 (f16) words, summed in f32.
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  cpu::reduce_add(static_cast<bf16*>(inout), static_cast<const bf16*>(in), *len, 1.0f);
}
void f16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  cpu::reduce_add(static_cast<f16*>(inout), static_cast<const f16*>(in), *len, 1.0f);
}

void scale_for_average(Tensor& buffer, int nranks) {
  float scale = 1.0f / static_cast<float>(nranks);
  if (buffer.dtype() == DType::F32) {
    cpu::scale_inplace(buffer.data<float>(), buffer.numel(), scale);
  } else if (buffer.dtype() == DType::F16) {
    cpu::scale_inplace(buffer.data<f16>(), buffer.numel(), scale);
  } else {
    cpu::scale_inplace(buffer.data<bf16>(), buffer.numel(), scale);
  }
}

}  // namespace

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::BF16:
    case DType::F16:
    case DType::U16: return MPI_UINT16_T;
  }
  ND_FAIL("no MPI datatype for dtype " << static_cast<int>(dtype));
}

MPI_Op mpi_sum_op(DType dtype) {
  if (dtype == DType::F16) {
    static MPI_Op f16_op = [] {
      MPI_Op op;
      MPI_CHECK(MPI_Op_create(&f16_sum, 1, &op));
      return op;
    }();
    return f16_op;
  }
  if (dtype != DType::BF16) return MPI_SUM;
  static MPI_Op bf16_op = [] {
    MPI_Op op;
    MPI_CHECK(MPI_Op_create(&bf16_sum, 1, &op));
    return op;
  }();
  return bf16_op;
}

MPI_Op mpi_reduce_op(ReduceOp op, DType dtype) {
  if (op != ReduceOp::Max) return mpi_sum_op(dtype);
  ND_CHECK(dtype == DType::F32, "max reductions take f32, not " << dtype_name(dtype));
  return MPI_MAX;
}

int mpi_count(int64_t numel, const char* what) {
  ND_CHECK(numel <= INT_MAX, what << ": " << numel << " elements exceed MPI's int count");
  return static_cast<int>(numel);
}

MpiComm::MpiComm(MPI_Comm parent) {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  ND_CHECK(initialized, "MpiComm needs MPI_Init first");
  MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

// A destructor must not throw, so its MPI calls are the only ones not checked.
MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || comm_ == MPI_COMM_NULL) return;
  for (MPI_Request& r : posted_) MPI_Cancel(&r);
  MPI_Comm_free(&comm_);
}

void MpiComm::send(const Tensor& buffer, int peer) {
  check_comm_buffer(*this, buffer, "send buffer");
  check_peer(*this, peer, "send");
  grouped_.push_back({true, buffer, peer});
  if (group_depth_ == 0) group_end();
}

void MpiComm::recv(Tensor& buffer, int peer) {
  check_comm_buffer(*this, buffer, "recv buffer");
  check_peer(*this, peer, "recv");
  grouped_.push_back({false, buffer, peer});
  if (group_depth_ == 0) group_end();
}

void MpiComm::group_start() { ++group_depth_; }

void MpiComm::post(const PendingOp& op) {
  MPI_Request request;
  int count = mpi_count(op.buffer.numel(), op.is_send ? "send" : "recv");
  MPI_Datatype type = mpi_datatype(op.buffer.dtype());
  if (op.is_send) {
    MPI_CHECK(MPI_Isend(op.buffer.raw_data(), count, type, op.peer, kPointToPointTag, comm_, &request));
  } else {
    MPI_CHECK(MPI_Irecv(op.buffer.raw_data(), count, type, op.peer, kPointToPointTag, comm_, &request));
  }
  posted_.push_back(request);
  posted_recv_counts_.push_back(op.is_send ? -1 : count);
  posted_types_.push_back(type);
}

void MpiComm::post_group() {
  if (group_depth_ > 0) --group_depth_;
  if (group_depth_ > 0) return;  // nested group: the outermost end posts
  std::vector<PendingOp> ops;
  ops.swap(grouped_);
  for (const PendingOp& op : ops) post(op);
}

void MpiComm::wait_posted() {
  if (posted_.empty()) return;
  std::vector<MPI_Request> requests;
  std::vector<int> recv_counts;
  std::vector<MPI_Datatype> types;
  requests.swap(posted_);
  recv_counts.swap(posted_recv_counts_);
  types.swap(posted_types_);
  std::vector<MPI_Status> statuses(requests.size());
  int rc = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
  ND_CHECK(rc == MPI_SUCCESS, "point-to-point transfer failed (a send larger than its recv?): "
                                  << mpi_error_string(rc));
  for (size_t i = 0; i < requests.size(); ++i) {
    if (recv_counts[i] < 0) continue;
    int received = 0;
    MPI_CHECK(MPI_Get_count(&statuses[i], types[i], &received));
    ND_CHECK(received == recv_counts[i], "recv from rank " << statuses[i].MPI_SOURCE << " got " << received
                                                           << " elements, expected " << recv_counts[i]);
  }
}

CommWork MpiComm::allreduce_async(Tensor& buffer, ReduceOp op) {
  check_comm_buffer(*this, buffer, "allreduce buffer");
  check_reducible(buffer, "allreduce buffer");
  agree_on_layout(CollectiveOp::AllReduce, Algorithm::Native, buffer, static_cast<int>(op));
  int count = mpi_count(buffer.numel(), "allreduce");
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer.raw_data(), count, mpi_datatype(buffer.dtype()),
                          mpi_reduce_op(op, buffer.dtype()), comm_));
  if (op == ReduceOp::Avg) scale_for_average(buffer, size_);
  return CommWork();
}

CommWork MpiComm::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) {
  check_reduce_scatter(*this, input, output);
  check_reducible(input, "reduce_scatter input");
  agree_on_layout(CollectiveOp::ReduceScatter, Algorithm::Native, input, static_cast<int>(op));
  int count = mpi_count(output.numel(), "reduce_scatter");
  const size_t bytes = static_cast<size_t>(output.numel()) * dtype_size(output.dtype());
  // In place (ZeRO 1): output is block rank() of input, which MPI forbids; the input is copied.
  std::vector<char> staged;
  const void* send = input.raw_data();
  if (output.raw_data() == static_cast<const char*>(input.raw_data()) + static_cast<size_t>(rank_) * bytes) {
    staged.assign(static_cast<const char*>(input.raw_data()), static_cast<const char*>(input.raw_data()) + bytes * size_);
    send = staged.data();
  }
  MPI_CHECK(MPI_Reduce_scatter_block(send, output.raw_data(), count, mpi_datatype(input.dtype()),
                                     mpi_reduce_op(op, input.dtype()), comm_));
  if (op == ReduceOp::Avg) scale_for_average(output, size_);
  return CommWork();
}

CommWork MpiComm::all_gather_async(const Tensor& input, Tensor& output) {
  check_all_gather(*this, input, output);
  agree_on_layout(CollectiveOp::AllGather, Algorithm::Native, input, 0);
  int count = mpi_count(input.numel(), "all_gather");
  MPI_Datatype type = mpi_datatype(input.dtype());
  // In place (ZeRO's gather of parameters): input is block rank() of output, which MPI spells IN_PLACE.
  const bool in_place = input.raw_data() == static_cast<const char*>(output.raw_data()) +
                                               static_cast<size_t>(rank_) * input.numel() * dtype_size(input.dtype());
  MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : input.raw_data(), count, type, output.raw_data(), count, type,
                          comm_));
  return CommWork();
}

CommWork MpiComm::broadcast_async(Tensor& buffer, int root) {
  check_comm_buffer(*this, buffer, "broadcast buffer");
  check_peer(*this, root, "broadcast root");
  agree_on_layout(CollectiveOp::Broadcast, Algorithm::Native, buffer, root);
  int count = mpi_count(buffer.numel(), "broadcast");
  MPI_CHECK(MPI_Bcast(buffer.raw_data(), count, mpi_datatype(buffer.dtype()), root, comm_));
  return CommWork();
}

CommWork MpiComm::all_to_all_async(const Tensor& input, Tensor& output) {
  check_all_to_all(*this, input, output);
  agree_on_layout(CollectiveOp::AllToAll, Algorithm::Native, input, 0);
  int count = mpi_count(input.numel() / size_, "all_to_all");
  MPI_Datatype type = mpi_datatype(input.dtype());
  MPI_CHECK(MPI_Alltoall(input.raw_data(), count, type, output.raw_data(), count, type, comm_));
  return CommWork();
}

void MpiComm::barrier() { MPI_CHECK(MPI_Barrier(comm_)); }

std::unique_ptr<Comm> MpiComm::split(int color, int key) {
  ND_CHECK(color >= 0, "split: color " << color << " must be >= 0");
  MPI_Comm child;
  MPI_CHECK(MPI_Comm_split(comm_, color, key, &child));
  auto result = std::make_unique<MpiComm>(child);
  MPI_CHECK(MPI_Comm_free(&child));
  return result;
}

void MpiComm::host_allreduce(int64_t* values, int n, HostReduce op) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_INT64_T, op == HostReduce::Sum ? MPI_SUM : MPI_MAX, comm_));
}

void MpiComm::host_allreduce(double* values, int n, HostReduce op) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, op == HostReduce::Sum ? MPI_SUM : MPI_MAX, comm_));
}

}  // namespace nd::dist
