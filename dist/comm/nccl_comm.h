// NcclComm: the GPU backend. Transfers and native collectives run on a stream of this comm's own
// (each split has its own too), so one group's traffic never queues behind another's; a host MPI
// communicator beside it carries the unique id, the layout agreements and other small host-side
// values. Ordering follows Comm's contract (dist/comm/comm.h): each collective makes the comm's stream
// wait for an event of the compute stream, and its CommWork makes the compute stream wait for an
// event recorded right after it. CUDA builds only.
#pragma once
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <map>
#include <memory>
#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

class NcclComm : public Comm {
 public:
  // Collective over `parent`: rank 0 creates the NCCL unique id and MPI broadcasts it. Uses GPU
  // `device_index`, which the caller chose (see select_local_gpu). With wide_p2p it makes a second
  // NCCL communicator with more channels for send/recv (the ring's transfers); without, send/recv
  // share the native collectives' communicator, so a run that never uses the ring pays for
  // neither its channels' buffers nor its proxy work.
  NcclComm(MPI_Comm parent, int device_index, bool wide_p2p = true);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cuda(device_index_); }
  const char* backend() const override { return "nccl"; }

  void send(const Tensor& buffer, int peer) override;
  void recv(Tensor& buffer, int peer) override;
  void group_start() override;
  void post_group() override;
  void wait_posted() override {}  // stream-ordered: later work on stream() sees the data

  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  CommWork reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) override;
  CommWork all_gather_async(const Tensor& input, Tensor& output) override;
  CommWork broadcast_async(Tensor& buffer, int root) override;
  // NCCL has no all-to-all call of its own: one group of a send and a recv per peer on the
  // collectives' communicator (NCCL's documented recipe), its own block copied on the stream.
  CommWork all_to_all_async(const Tensor& input, Tensor& output) override;
  void barrier() override;
  std::unique_ptr<Comm> split(int color, int key) override;

  void synchronize() override;
  void host_allreduce(int64_t* values, int n, HostReduce op) override;
  void host_allreduce(double* values, int n, HostReduce op) override;

  // The communicators are blocking (a non-blocking one costs tens of microseconds of host time per
  // call, nccl_comm.cpp); the watchdog thread reads their asynchronous errors and aborts them
  // while the main thread waits, which NCCL allows on blocking communicators too.
  std::string async_error() override;
  void abort() override;

  // Makes the comm stream wait (on the GPU, not the host) for all work queued so far on the
  // device's compute stream.
  void order_after_compute() override;
  // A CommWork complete when everything queued so far on the comm stream is.
  CommWork record_work() override;
  // cudaMemcpyAsync on the comm's stream.
  void stream_copy(Tensor& dst, const Tensor& src) override;
  // The stream every transfer runs on, and a second stream for work that overlaps transfers
  // (the ring's reductions); events order the two.
  cudaStream_t stream() const { return stream_; }
  cudaStream_t side_stream() const { return side_stream_; }
  // Event i of a pool of timing-free events, created on first use and reused across calls.
  cudaEvent_t event(size_t i);
  // A device buffer of at least `numel` elements of `dtype`, reused across calls (staging); one
  // per dtype.
  Tensor scratch(int64_t numel, DType dtype);

 private:
  MPI_Comm mpi_ = MPI_COMM_NULL;
  ncclComm_t nccl_ = nullptr;
  // send/recv (and so the ring) run on this duplicate of nccl_, made with more channels, so
  // the native collectives keep NCCL's own tuning on nccl_.
  ncclComm_t p2p_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  int device_index_ = 0;
  int group_depth_ = 0;
  std::atomic<bool> aborted_{false};
  cudaStream_t stream_ = nullptr;       // this comm's own
  cudaStream_t side_stream_ = nullptr;
  cudaEvent_t compute_done_ = nullptr;  // recorded on the compute stream, waited on by stream_
  std::vector<cudaEvent_t> events_;
  // Events behind CommWorks, used in turn. Reusing one re-records it later on the same stream,
  // so a late wait() on an old CommWork waits for more, never for less.
  std::vector<cudaEvent_t> work_events_;
  size_t next_work_event_ = 0;
  // One scratch buffer per dtype: tensor parallelism alternates bf16 activations (the ring's
  // staging) and f32 statistics (the loss's row sums) every step, and a shared buffer would be
  // reallocated, with a host synchronisation, at each switch, and so could not be captured.
  std::map<DType, Tensor> scratch_;
};

// Picks this process's GPU from its local rank (OMPI_COMM_WORLD_LOCAL_RANK, else the rank in
// its shared-memory node), before any CUDA context exists, and makes it current. Collective
// over `world`: raises on every rank when any node has more local ranks than GPUs.
int select_local_gpu(MPI_Comm world);

}  // namespace nd::dist
#endif
