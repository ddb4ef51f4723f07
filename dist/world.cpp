// make_world_comm and the launcher probes it needs.
#include "dist/world.h"

#include <cstdlib>
#include <string>

#include "dist/local_comm.h"
#include "dist/mpi_check.h"
#include "dist/mpi_comm.h"
#include "dist/nccl_comm.h"

namespace nd::dist {

namespace {

// Runs from atexit, where a throw would terminate the process: its MPI calls are not checked.
void finalize_mpi_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

// A positive integer environment variable, or -1.
int env_int(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return -1;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  return (*end == '\0' && value >= 0) ? static_cast<int>(value) : -1;
}

}  // namespace

bool launched_under_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_RANK") != nullptr ||
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
  LocalPlace place;
  int env_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
  int env_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  // Every rank must take the same branch: the split below is collective.
  int have_env = (env_rank >= 0 && env_size > 0) ? 1 : 0, all_have_env = 0;
  MPI_CHECK(MPI_Allreduce(&have_env, &all_have_env, 1, MPI_INT, MPI_MIN, world));
  if (all_have_env) {
    place.rank = env_rank;
    place.size = env_size;
    return place;
  }
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
  if (device.is_cpu()) return std::make_unique<MpiComm>(MPI_COMM_WORLD);
#if NANODIST_WITH_CUDA
  int gpu = select_local_gpu(MPI_COMM_WORLD);
  return std::make_unique<NcclComm>(MPI_COMM_WORLD, gpu, ring_transfers);
#else
  ND_FAIL("device " << device.str() << " needs a build with CUDA (this build has none)");
#endif
}

}  // namespace nd::dist
