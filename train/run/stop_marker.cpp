// The marker is written after the stop's checkpoint is complete (RunSaver::finish), so its
// presence means that checkpoint is there to resume from.
#include "train/run/stop_marker.h"

#include <filesystem>
#include <system_error>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd::train {

std::string stop_marker_path(const std::string& out_dir) { return out_dir + "/stopped_by_signal"; }

void write_stop_marker(const std::string& out_dir, int64_t step, const std::string& signal) {
  write_file_atomically(stop_marker_path(out_dir), "step " + std::to_string(step) + " " + signal + "\n");
}

void remove_stop_marker(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::remove(stop_marker_path(out_dir), ec);
  ND_CHECK_INPUT(!ec, "cannot remove " << stop_marker_path(out_dir) << ": " << ec.message());
}

}  // namespace nd::train
