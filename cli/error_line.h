// The one stderr line a failed command ends with. An input error (nd::ErrorKind::Input: a bad
// file, flag, config or world size) reads as its sentence alone; an internal one (a bug) also
// names the failing check, file:line and rank, as does any error when verbose.
#pragma once
#include <exception>
#include <string>

namespace nd::cli {

// True when argv holds --verbose or NANODIST_VERBOSE is set to anything but "" or "0".
bool verbose_errors(int argc, const char* const* argv);

// "nanodist: error: <sentence>" or "nanodist: error: <sentence> (check `...` at file:line, rank R)".
std::string error_line(const std::exception& error, bool verbose);

// False on a rank other than 0 of an mpirun (OMPI_COMM_WORLD_RANK, PMI_RANK) for an input error
// when not verbose: every rank meets the same bad flag, file or config, and rank 0 prints it, so
// the user reads it once. Internal errors (which may be one rank's) print on every rank.
bool print_error_here(const std::exception& error, bool verbose);

}  // namespace nd::cli
