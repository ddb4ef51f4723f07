// Writing and comparing OUT/run.conf (run_settings_file.h).
#include "train/run/run_settings_file.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

constexpr const char* kRanksComment = "# ranks = ";

bool launch_flag(const std::string& key) { return key == "resume" || key == "overwrite"; }

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") + 1 - begin);
}

}  // namespace

std::string run_settings_path(const std::string& out_dir) { return out_dir + "/run.conf"; }

void write_run_settings_file(const TrainConfig& config, int world_size) {
  std::string text =
      "# The resolved settings of the run in this directory (nanodist train --config run.conf repeats it).\n";
  text += kRanksComment + std::to_string(world_size) + "\n";
  for (const ConfigField& f : train_config_fields(config))
    if (!launch_flag(f.name)) text += f.name + " = " + f.text + "\n";
  write_file_atomically(run_settings_path(config.checkpoint.out_dir), text);
}

std::vector<std::string> changed_run_settings(const TrainConfig& config, int world_size) {
  const std::string path = run_settings_path(config.checkpoint.out_dir);
  std::vector<std::string> changed;
  if (!std::filesystem::exists(path)) return changed;
  std::map<std::string, std::string> recorded;
  std::string ranks;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kRanksComment, 0) == 0) ranks = trim(line.substr(std::string(kRanksComment).size()));
    line = trim(line.substr(0, line.find('#')));
    const size_t eq = line.find('=');
    if (eq != std::string::npos) recorded[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  if (!ranks.empty() && ranks != std::to_string(world_size))
    changed.push_back("ranks " + ranks + " -> " + std::to_string(world_size));
  for (const ConfigField& f : train_config_fields(config)) {
    if (launch_flag(f.name)) continue;
    auto it = recorded.find(f.name);
    const std::string was = it == recorded.end() ? "(not recorded)" : it->second;
    if (was != f.text) changed.push_back(f.name + " " + (was.empty() ? "\"\"" : was) + " -> " +
                                         (f.text.empty() ? "\"\"" : f.text));
  }
  return changed;
}

std::vector<std::string> update_run_settings_file(const TrainConfig& config, int world_size, bool resumed) {
  std::vector<std::string> lines;
  if (resumed) {
    const std::vector<std::string> changed = changed_run_settings(config, world_size);
    std::string joined;
    for (const std::string& c : changed) joined += (joined.empty() ? "" : ", ") + c;
    if (!changed.empty())
      lines.push_back("resume: settings changed since the last launch (" + run_settings_path(config.checkpoint.out_dir) +
                      "): " + joined);
  }
  write_run_settings_file(config, world_size);
  return lines;
}

}  // namespace nd::train
