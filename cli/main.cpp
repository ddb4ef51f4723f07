// nanodist: one binary; the commands and their flags are the table in cli/subcommand.cpp.
// Every error ends here as one stderr line `nanodist: error: ...` (once under mpirun) and exit
// status 1; train's other statuses are train/run/exit_status.h's.
#include <exception>
#include <iostream>

#include "cli/error_line.h"
#include "cli/subcommand.h"

int main(int argc, char** argv) {
  try {
    return nd::cli::run_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::cout.flush();
    const bool verbose = nd::cli::verbose_errors(argc, argv);
    if (nd::cli::print_error_here(e, verbose)) std::cerr << nd::cli::error_line(e, verbose) << std::endl;
  }
  return 1;
}
