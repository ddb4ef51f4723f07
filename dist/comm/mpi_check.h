// MPI member of the error-macro family (tensor/error.h): a failing MPI call throws nd::Error with
// the statement, file:line, rank and MPI's own error string. Communicators use MPI_ERRORS_RETURN.
#pragma once
#include <mpi.h>

#include <string>

#include "tensor/error.h"

namespace nd::dist {

inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

}  // namespace nd::dist

#define MPI_CHECK(call)                                                                       \
  do {                                                                                        \
    int nd_mpi_rc_ = (call);                                                                  \
    if (nd_mpi_rc_ != MPI_SUCCESS)                                                            \
      ::nd::throw_error(#call, __FILE__, __LINE__,                                            \
                        "MPI error: " + ::nd::dist::mpi_error_string(nd_mpi_rc_));            \
  } while (0)
