// The CPU tests under mpirun share one MPI world communicator per binary, made on first use and
// kept to the end (as nccl_test_world.h keeps the NCCL one).
#pragma once
#include <memory>

#include "dist/comm/world.h"

namespace nd::test {

inline dist::Comm& mpi_world() {
  static std::unique_ptr<dist::Comm> comm = dist::make_world_comm(Device::cpu());
  return *comm;
}

}  // namespace nd::test
