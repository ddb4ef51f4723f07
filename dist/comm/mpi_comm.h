// MpiComm: the CPU backend over an MPI communicator (a private duplicate, with MPI_ERRORS_RETURN
// so failures become nd::Error). bf16 reductions use a user-defined MPI op summing in f32.
#pragma once
#include <mpi.h>

#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

class MpiComm : public Comm {
 public:
  // Duplicates `parent`; MPI must be initialised.
  explicit MpiComm(MPI_Comm parent);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cpu(); }
  const char* backend() const override { return "mpi"; }
  MPI_Comm handle() const { return comm_; }

  void send(const Tensor& buffer, int peer) override;
  void recv(Tensor& buffer, int peer) override;
  void group_start() override;
  void post_group() override;
  void wait_posted() override;

  // Blocking: the returned CommWork is already complete.
  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  CommWork all_gather_async(const Tensor& input, Tensor& output) override;
  CommWork broadcast_async(Tensor& buffer, int root) override;
  CommWork all_to_all_async(const Tensor& input, Tensor& output) override;
  void barrier() override;
  std::unique_ptr<Comm> split(int color, int key) override;

  void synchronize() override {}
  void host_allreduce(int64_t* values, int n, HostReduce op) override;
  void host_allreduce(double* values, int n, HostReduce op) override;

 private:
  struct PendingOp {
    bool is_send;
    Tensor buffer;
    int peer;
  };
  void post(const PendingOp& op);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int group_depth_ = 0;
  std::vector<PendingOp> grouped_;     // collected inside the open group
  std::vector<MPI_Request> posted_;    // started, not yet waited on
  std::vector<int> posted_recv_counts_;  // per posted request: expected count, -1 for a send
  std::vector<MPI_Datatype> posted_types_;
};

// MPI datatype and reduce op for a dtype (bf16 travels as 16-bit words, summed by a user op).
MPI_Datatype mpi_datatype(DType dtype);
MPI_Op mpi_sum_op(DType dtype);
// The MPI operation of `op` for `dtype` (Avg sums; the caller scales). Max takes f32 only.
MPI_Op mpi_reduce_op(ReduceOp op, DType dtype);
// Element count as MPI's int, or an nd::Error naming `what` when it does not fit.
int mpi_count(int64_t numel, const char* what);

}  // namespace nd::dist
