// Times a batch of communication calls: CUDA events on the comm's stream for NcclComm (so the
// GPU's own clock measures the work), MPI_Wtime after a synchronize otherwise.
#pragma once
#include "dist/comm/comm.h"

namespace nd::dist {

class CommTimer {
 public:
  explicit CommTimer(Comm& comm);
  ~CommTimer();
  CommTimer(const CommTimer&) = delete;
  CommTimer& operator=(const CommTimer&) = delete;

  void start();
  // Seconds since start(), after all work queued since then has finished.
  double stop();

 private:
  Comm& comm_;
  double host_start_ = 0;
  void* gpu_start_ = nullptr;  // cudaEvent_t when the comm is NCCL
  void* gpu_stop_ = nullptr;
};

}  // namespace nd::dist
