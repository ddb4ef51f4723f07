// This process's rank as the launcher numbered it (mpirun, srun), for commands that run the same
// work on every rank without a communicator (sample) and for the error line: read from the
// launcher's environment, before and without MPI.
#pragma once

namespace nd::cli {

// OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK; 0 when none is set (not launched, or one process).
int launcher_rank();

}  // namespace nd::cli
