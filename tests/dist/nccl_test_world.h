// What the NCCL tests under mpirun share: one NCCL world comm per binary, and the check that this
// node has a GPU for each of its ranks (every rank of a node sees the same answer, so all skip).
#pragma once
#include <gtest/gtest.h>

#include "dist/comm/world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nd::test {

// Creating an NCCL comm costs far more than any test. Never destroyed, so no destructor runs
// after MPI_Finalize or during the CUDA runtime's shutdown.
inline dist::Comm& gpu_world() {
  static dist::Comm* comm = dist::make_world_comm(Device::cuda(0)).release();
  return *comm;
}

// The world as `nanodist train` makes it: point-to-point on the main NCCL communicator (no wide
// send/recv communicator, which only bench-comm's lone ring transfers want). Training tests whose
// ranks exchange activations (pipeline stages) use this one.
inline dist::Comm& training_world() {
  static dist::Comm* comm = dist::make_world_comm(Device::cuda(0), /*ring_transfers=*/false).release();
  return *comm;
}

inline bool enough_gpus() {
  if (!cuda_available()) return false;
#if NANODIST_WITH_CUDA
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) return false;
  return dist::local_place(MPI_COMM_WORLD).size <= gpus;
#else
  return false;
#endif
}

}  // namespace nd::test

#define SKIP_WITHOUT_GPU() \
  if (!::nd::test::enough_gpus()) GTEST_SKIP() << "needs one GPU per rank"
