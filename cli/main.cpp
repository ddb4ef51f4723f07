// nanodist: one binary; the commands and their flags are the table in cli/subcommand.cpp.
// Every error ends here as one stderr line `nanodist: error: ...` and a non-zero exit.
#include <exception>
#include <iostream>

#include "cli/error_line.h"
#include "cli/subcommand.h"

int main(int argc, char** argv) {
  try {
    return nd::cli::run_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << nd::cli::error_line(e, nd::cli::verbose_errors(argc, argv)) << std::endl;
  }
  return 1;
}
