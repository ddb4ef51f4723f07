// NcclPipes (nccl_pipes.h): one blocking NCCL communicator and one non-blocking CUDA stream per
// pipe, made together on every rank.
#include "dist/comm/nccl_pipes.h"

#if NANODIST_WITH_CUDA
#include "dist/comm/mpi_check.h"
#include "dist/comm/nccl_check.h"

namespace nd::dist {

NcclPipes::NcclPipes(MPI_Comm mpi, int rank, int size, int device_index, int count, int ctas)
    : device_index_(device_index), ctas_(ctas) {
  ND_CHECK(count >= 1 && ctas >= 1, "ring pipes: " << count << " pipe(s) of " << ctas << " CTAs");
  CUDA_CHECK(cudaSetDevice(device_index_));
  pipes_.reserve(count);
  for (int p = 0; p < count; ++p) {
    ncclUniqueId id;
    if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.minCTAs = config.maxCTAs = ctas;
    Pipe pipe;
    NCCL_CHECK(ncclCommInitRankConfig(&pipe.nccl, size, id, rank, &config));
    CUDA_CHECK(cudaStreamCreateWithFlags(&pipe.stream, cudaStreamNonBlocking));
    pipes_.push_back(pipe);
  }
}

// A destructor must not throw, so its CUDA and NCCL calls are not checked.
NcclPipes::~NcclPipes() {
  cudaSetDevice(device_index_);
  for (Pipe& pipe : pipes_) {
    if (!aborted_) {
      cudaStreamSynchronize(pipe.stream);
      ncclCommFinalize(pipe.nccl);
      ncclCommDestroy(pipe.nccl);
    }
    cudaStreamDestroy(pipe.stream);
  }
}

void NcclPipes::send(int pipe, const Tensor& buffer, int peer) {
  const Pipe& p = pipes_.at(pipe);
  NCCL_CHECK(ncclSend(buffer.raw_data(), buffer.nbytes(), ncclUint8, peer, p.nccl, p.stream));
}

void NcclPipes::recv(int pipe, Tensor& buffer, int peer) {
  const Pipe& p = pipes_.at(pipe);
  NCCL_CHECK(ncclRecv(buffer.raw_data(), buffer.nbytes(), ncclUint8, peer, p.nccl, p.stream));
}

void NcclPipes::synchronize() {
  for (const Pipe& pipe : pipes_) CUDA_CHECK(cudaStreamSynchronize(pipe.stream));
}

std::string NcclPipes::async_error() {
  if (aborted_) return "";
  for (const Pipe& pipe : pipes_) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(pipe.nccl, &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress)
      return std::string(ncclGetErrorString(state)) + " " + ncclGetLastError(pipe.nccl);
  }
  return "";
}

void NcclPipes::abort() {
  if (aborted_.exchange(true)) return;
  for (const Pipe& pipe : pipes_) ncclCommAbort(pipe.nccl);
}

}  // namespace nd::dist
#endif
