// OUT/stopped_by_signal: what a run stopped by a signal leaves once its checkpoint is saved (one
// line, "step S SIGTERM"), so a wrapper can tell a saved stop from a failure by the run's files
// when the exit status cannot say it: mpirun reports 1, not the ranks' 75, when it was signalled
// itself (Ctrl-C). A run removes it when it claims --out, so it only ever describes the last run.
#pragma once
#include <cstdint>
#include <string>

namespace nd::train {

// OUT/stopped_by_signal
std::string stop_marker_path(const std::string& out_dir);

// Writes it atomically; nd::Error naming the file when it cannot be written.
void write_stop_marker(const std::string& out_dir, int64_t step, const std::string& signal);

// Removes it where it exists; nd::Error naming the file when it cannot be removed.
void remove_stop_marker(const std::string& out_dir);

}  // namespace nd::train
