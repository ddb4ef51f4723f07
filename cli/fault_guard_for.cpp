// fault_guard_for.h: the guard prints its one line on stderr, as main() prints an error.
#include "cli/fault_guard_for.h"

#include <cstdio>

namespace nd::cli {

std::unique_ptr<dist::FaultGuard> fault_guard_for(dist::Comm& world, double comm_timeout_s,
                                                  double heartbeat_timeout_s) {
  if (world.size() < 2) return nullptr;
  dist::FaultOptions options;
  options.comm_timeout_s = comm_timeout_s;
  options.heartbeat_timeout_s = heartbeat_timeout_s;
  return std::make_unique<dist::FaultGuard>(world, options, [](const std::string& line) {
    std::fprintf(stderr, "nanodist: error: %s\n", line.c_str());
    std::fflush(stderr);
  });
}

}  // namespace nd::cli
