// NcclPipes: the pipes of the pipelined GPU ring (RingOptions.pipeline): several blocking NCCL
// communicators over the same ranks, each with its own stream, so that point-to-point kernels of
// different pipes run at once. NCCL runs the kernels of one communicator one after another
// whatever the stream, so overlapping transfers need communicators of their own. An NcclComm
// makes them on first use (collective) and owns them. CUDA builds only.
#pragma once
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace nd::dist {

class NcclPipes {
 public:
  // Collective over `mpi` (rank 0 makes each unique id, MPI broadcasts it). Every communicator
  // gets `ctas` CTAs (NCCL channels): pipes x ctas of them can be resident at once, which the
  // pipes need, since a pipe's kernel spins until its peers' kernels of the same pipe run.
  NcclPipes(MPI_Comm mpi, int rank, int size, int device_index, int count, int ctas);
  ~NcclPipes();
  NcclPipes(const NcclPipes&) = delete;
  NcclPipes& operator=(const NcclPipes&) = delete;

  int count() const { return static_cast<int>(pipes_.size()); }
  int ctas() const { return ctas_; }
  cudaStream_t stream(int pipe) const { return pipes_[pipe].stream; }

  // Posted inside the caller's ncclGroupStart/End; the bytes of `buffer` (contiguous, on this
  // device) go to / come from `peer` on pipe `pipe`'s communicator and stream.
  void send(int pipe, const Tensor& buffer, int peer);
  void recv(int pipe, Tensor& buffer, int peer);

  // Waits on the host for every pipe's stream.
  void synchronize();
  // As NcclComm's: safe to call from the watchdog thread. After abort() the communicators are
  // not used again, nor finalized.
  std::string async_error();
  void abort();

 private:
  struct Pipe {
    ncclComm_t nccl = nullptr;
    cudaStream_t stream = nullptr;
  };
  int device_index_ = 0;
  int ctas_ = 0;
  std::vector<Pipe> pipes_;
  std::atomic<bool> aborted_{false};
};

}  // namespace nd::dist
#endif
