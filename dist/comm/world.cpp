// make_world_comm and the launcher probes it needs.
#include "dist/comm/world.h"

#include <cstdlib>

#include "dist/comm/local_comm.h"
#include "dist/comm/mpi_check.h"
#include "dist/comm/mpi_comm.h"
#include "dist/comm/nccl_comm.h"
#include "dist/comm/node_map.h"

namespace nd::dist {

namespace {

// Runs from atexit, where a throw would terminate the process: its MPI calls are not checked.
void finalize_mpi_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

}  // namespace

bool launched_under_mpi() {
  // Open MPI's mpirun; srun with PMIx (Open MPI built against it) or PMI-2.
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr ||
         std::getenv("PMI_SIZE") != nullptr;
}

void ensure_mpi_initialized() {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) return;
  // FUNNELED: only the main thread calls MPI; the watchdog and heartbeat threads (fault_guard.h)
  // never do, so MPI needs no locking of its own.
  int provided = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  std::atexit(&finalize_mpi_at_exit);
}

LocalPlace local_place(MPI_Comm world) {
  // MPI's shared-memory split, not a launcher's variables (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID):
  // the library knows which processes share a host whatever started them.
  LocalPlace place;
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &place.rank));
  MPI_CHECK(MPI_Comm_size(node, &place.size));
  MPI_CHECK(MPI_Comm_free(&node));
  return place;
}

std::unique_ptr<Comm> make_world_comm(Device device, bool ring_transfers) {
  if (!launched_under_mpi()) return std::make_unique<LocalComm>(device);
  ensure_mpi_initialized();
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  set_error_rank(rank);
  if (size == 1) return std::make_unique<LocalComm>(device);
  remember_node();
  if (device.is_cpu()) return std::make_unique<MpiComm>(MPI_COMM_WORLD);
#if NANODIST_WITH_CUDA
  int gpu = select_local_gpu(MPI_COMM_WORLD);
  return std::make_unique<NcclComm>(MPI_COMM_WORLD, gpu, ring_transfers);
#else
  ND_FAIL("device " << device.str() << " needs a build with CUDA (this build has none)");
#endif
}

}  // namespace nd::dist
