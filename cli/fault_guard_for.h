// The fault guard (watchdog + heartbeat, dist/parallel/fault_guard.h) of a command that communicates: one
// for a multi-rank run, none for one rank. Its error line is the command's `nanodist: error:`.
#pragma once
#include <memory>

#include "dist/parallel/fault_guard.h"

namespace nd::cli {

std::unique_ptr<dist::FaultGuard> fault_guard_for(dist::Comm& world, double comm_timeout_s,
                                                  double heartbeat_timeout_s);

}  // namespace nd::cli
