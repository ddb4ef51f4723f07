// The version text; the commit comes from the header cmake/NanodistCommit.cmake writes at build
// time, the rest from compile definitions (cli/CMakeLists.txt) and the libraries' own headers.
#include "cli/version.h"

#include <string>

#include <mpi.h>

#include "nd_commit.h"
#ifdef NANODIST_WITH_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace nd::cli {

std::string version_text() {
  std::string text = std::string("nanodist ") + ND_VERSION + " (commit " + ND_GIT_COMMIT + ")\nbuild: ";
#ifdef NANODIST_WITH_CUDA
  text += "CUDA " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  text += ND_WITH_CUDNN ? ", cuDNN attention yes" : ", cuDNN attention no";
  text += ", NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#else
  text += "CUDA no (CPU only), cuDNN attention no, NCCL no";
#endif
  text += std::string(", OpenBLAS ") + (ND_OPENBLAS_VERSION[0] ? ND_OPENBLAS_VERSION : "(version unknown)");
  text += ", MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION);
#ifdef OMPI_MAJOR_VERSION
  text += " (Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
          std::to_string(OMPI_RELEASE_VERSION) + ")";
#endif
  return text + "\n";
}

}  // namespace nd::cli
