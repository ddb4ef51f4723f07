// Finding this process's place: under `mpirun -np N` every rank builds the world communicator
// with no extra flags; started without mpirun (or with one rank) it is a single LocalComm.
#pragma once
#include <mpi.h>

#include <memory>

#include "dist/comm/comm.h"

namespace nd::dist {

// True when an MPI launcher started this process (Open MPI, or a PMI-based launcher).
bool launched_under_mpi();

// Calls MPI_Init unless MPI is already initialised (tests/test_main.cpp does it first), and
// registers MPI_Finalize at exit when this call initialised it.
void ensure_mpi_initialized();

// This process's rank among the ranks of its node, and how many there are. Collective over
// `world`: MPI's shared-memory split, so mpirun and srun agree. The GPU a rank takes is its local
// rank (--ranks-per-node, dist/comm/node_map.h, pretends nodes for the grid, not for GPUs).
struct LocalPlace {
  int rank = 0;
  int size = 1;
};
LocalPlace local_place(MPI_Comm world);

// The world communicator for `device`: LocalComm when not under mpirun or world size 1;
// otherwise MpiComm for CPU, NcclComm for CUDA (the GPU is the local rank's, whatever index
// `device` names). Sets nd::set_error_rank so every error names the rank.
// `ring_transfers`: an NcclComm gets its wider send/recv communicator (see NcclComm), worth it
// when ring transfers run alone (bench-comm), not when they overlap compute (training); no
// effect on the other backends.
std::unique_ptr<Comm> make_world_comm(Device device, bool ring_transfers = true);

}  // namespace nd::dist
