// The launcher's rank variables: Open MPI's mpirun, then PMI-2 and PMIx (srun).
#include "cli/launcher_rank.h"

#include <cstdlib>
#include <initializer_list>

namespace nd::cli {

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    const char* rank = std::getenv(name);
    if (rank != nullptr && *rank != '\0') return std::atoi(rank);
  }
  return 0;
}

}  // namespace nd::cli
