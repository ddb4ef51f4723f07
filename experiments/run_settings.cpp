// Recording and comparing the settings of a run folder (run_settings.h).
#include "experiments/run_settings.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "tensor/error.h"

namespace nd::experiments {
namespace {

// Flags that cannot change a run's metrics, so a rerun may change them and still reuse the run:
//   out            each run's own folder (the experiment's --out may be moved as a whole)
//   resume         set by the queue itself
//   overwrite      how a run is launched (train/run/output_dir.h), never set by the queue
//   log-interval   how often a step record is written, not what it holds
//   ckpt-interval, keep   when checkpoints are written and how many stay; resuming is exact
//   comm-timeout, heartbeat-timeout   when a stuck rank gives up (dist/parallel/fault_guard.h)
//   cuda-graph     replays the same kernels in the same order as the eager step
//   bucket-mb      groups gradients into all-reduce calls; each element's sum is unchanged
//   layer-stats    a probe beside the step that draws no random numbers and changes no weight
//                  (train/layer_stats.h); the run is bit for bit the same
// Everything else is compared, including device, dtype, allreduce and attention: they choose
// kernels and reduction orders, so the numbers differ even where the maths agrees.
const std::set<std::string>& ignored_flags() {
  static const std::set<std::string> keys = {"out", "resume", "overwrite", "log-interval",      "ckpt-interval", "keep",
                                             "comm-timeout", "heartbeat-timeout", "cuda-graph", "bucket-mb",
                                             "layer-stats"};
  return keys;
}

std::string settings_path(const std::string& run_dir) { return run_dir + "/settings.conf"; }

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") + 1 - begin);
}

std::vector<std::pair<std::string, std::string>> read_settings(const std::string& path) {
  std::ifstream in(path);
  ND_CHECK_INPUT(in.good(), "cannot read " << path);
  std::vector<std::pair<std::string, std::string>> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    ND_CHECK_INPUT(eq != std::string::npos, "malformed line at " << path << ":" << n << ": '" << line << "'");
    out.emplace_back(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> run_settings(const train::TrainConfig& config, int world_size) {
  std::vector<std::pair<std::string, std::string>> out = {{"ranks", std::to_string(world_size)}};
  for (const train::ConfigField& f : train::train_config_fields(config)) {
    if (ignored_flags().count(f.name)) continue;
    if (f.name != "data" || f.text.empty()) {
      out.emplace_back(f.name, f.text);
      continue;
    }
    // The data as an absolute path, so `--data d` and `--data ./d` name the same data.
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(f.text, ec);
    const std::string data = ec ? "" : std::filesystem::weakly_canonical(absolute, ec).string();
    out.emplace_back(f.name, ec ? f.text : data);
  }
  return out;
}

void write_run_settings(const train::TrainConfig& config, int world_size) {
  const std::string path = settings_path(config.checkpoint.out_dir);
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    ND_CHECK_INPUT(out.is_open(), "cannot write " << temporary);
    out << "# The settings this run was started with (the number of ranks, then the train flags that\n"
           "# change its result). ablate and sweep reuse the run only while they are unchanged.\n";
    for (const auto& [key, value] : run_settings(config, world_size)) out << key << " = " << value << "\n";
    out.flush();
    ND_CHECK_INPUT(out.good(), "cannot write " << temporary);
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  ND_CHECK_INPUT(!ec, "cannot write " << path << ": " << ec.message());
}

std::string run_settings_mismatch(const train::TrainConfig& config, int world_size) {
  const std::string& dir = config.checkpoint.out_dir;
  const std::string path = settings_path(dir);
  if (!std::filesystem::exists(path))
    return "run folder " + dir + " has no record of the settings it was trained with (" + path +
           " is missing: an older nanodist made it); pick a fresh --out or delete that folder";
  const auto recorded = read_settings(path);
  for (const auto& [key, value] : run_settings(config, world_size)) {
    const std::string* old = nullptr;
    for (const auto& kv : recorded)
      if (kv.first == key) old = &kv.second;
    if (old && *old == value) continue;
    const std::string was = old ? *old : "(not recorded)";
    return "run folder " + dir + " was trained with other settings: " + key + " " + was + " there vs " + value +
           " now; pick a fresh --out or delete that folder";
  }
  return "";
}

}  // namespace nd::experiments
