// CommTimer: CUDA events for NCCL comms, MPI_Wtime otherwise.
#include "dist/comm/bench/comm_timer.h"

#include <mpi.h>

#include <chrono>

#include "dist/comm/mpi_check.h"
#include "dist/comm/nccl_comm.h"
#if NANODIST_WITH_CUDA
#include "tensor/cuda_check.h"
#endif

namespace nd::dist {

namespace {

double host_seconds() {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) return MPI_Wtime();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

CommTimer::CommTimer(Comm& comm) : comm_(comm) {
#if NANODIST_WITH_CUDA
  if (dynamic_cast<NcclComm*>(&comm_)) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    gpu_start_ = a;
    gpu_stop_ = b;
  }
#endif
}

CommTimer::~CommTimer() {
#if NANODIST_WITH_CUDA
  if (gpu_start_) cudaEventDestroy(static_cast<cudaEvent_t>(gpu_start_));
  if (gpu_stop_) cudaEventDestroy(static_cast<cudaEvent_t>(gpu_stop_));
#endif
}

void CommTimer::start() {
#if NANODIST_WITH_CUDA
  if (gpu_start_) {
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(gpu_start_), dynamic_cast<NcclComm&>(comm_).stream()));
    return;
  }
#endif
  comm_.synchronize();
  host_start_ = host_seconds();
}

double CommTimer::stop() {
#if NANODIST_WITH_CUDA
  if (gpu_stop_) {
    auto start = static_cast<cudaEvent_t>(gpu_start_), stop = static_cast<cudaEvent_t>(gpu_stop_);
    CUDA_CHECK(cudaEventRecord(stop, dynamic_cast<NcclComm&>(comm_).stream()));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  }
#endif
  comm_.synchronize();
  return host_seconds() - host_start_;
}

}  // namespace nd::dist
