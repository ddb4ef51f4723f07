// Writing, reading and comparing OUT/run.conf (run_settings_file.h).
#include "train/run/run_settings_file.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

constexpr const char* kRanksComment = "# ranks = ";
// What ablate and sweep recorded before run.conf was the one record: `ranks = N`, then the flags
// that change a run's result, the data as an absolute path.
constexpr const char* kLegacySettingsFile = "settings.conf";

bool launch_flag(const std::string& key) { return key == "resume" || key == "overwrite"; }

// The data and the run folder as absolute paths, so that the record means the same from any
// working directory (a resume launched elsewhere, a copied run folder).
std::string as_recorded(const std::string& key, const std::string& text) {
  if ((key != "data" && key != "out") || text.empty()) return text;
  return std::filesystem::absolute(text).lexically_normal().string();
}

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") + 1 - begin);
}

// `text` of the flag `key` as the flag reads it back, so two spellings of one value compare equal;
// the text itself where it does not parse (a flag renamed since, a value refused now).
std::string as_read(const std::string& key, const std::string& text) {
  TrainConfig c;
  try {
    set_train_config_field(c, key, text, key);
  } catch (const Error&) {
    return text;
  }
  for (const ConfigField& f : train_config_fields(c))
    if (f.name == key) return f.text;
  return text;
}

// The key = value lines of a settings file, with run.conf's ranks comment as the key "ranks".
std::map<std::string, std::string> read_settings(const std::string& path) {
  std::map<std::string, std::string> recorded;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.rfind(kRanksComment, 0) == 0) line = line.substr(2);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq != std::string::npos) recorded[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return recorded;
}

}  // namespace

std::string run_settings_path(const std::string& out_dir) { return out_dir + "/run.conf"; }

void write_run_settings_file(const TrainConfig& config, int world_size) {
  std::string text =
      "# The resolved settings of the run in this directory (nanodist train --config run.conf repeats it).\n";
  text += kRanksComment + std::to_string(world_size) + "\n";
  for (const ConfigField& f : train_config_fields(config))
    if (!launch_flag(f.name)) text += f.name + " = " + as_recorded(f.name, f.text) + "\n";
  write_file_atomically(run_settings_path(config.checkpoint.out_dir), text);
}

std::optional<std::vector<SettingChange>> changed_run_settings(const TrainConfig& config, int world_size,
                                                               const std::set<std::string>& ignored) {
  const std::string& dir = config.checkpoint.out_dir;
  // A legacy record wins: its data path is absolute, the run.conf beside it has the data as given.
  std::string path = dir + "/" + kLegacySettingsFile;
  const bool legacy = std::filesystem::exists(path);
  if (!legacy) path = run_settings_path(dir);
  if (!std::filesystem::exists(path)) return std::nullopt;
  // run.conf holds the run's resolved settings (--lr-decay-iters -1 as the --max-iters it means);
  // settings.conf held them as asked for.
  TrainConfig asked = config;
  if (!legacy) resolve_train_config(asked);
  const std::map<std::string, std::string> recorded = read_settings(path);
  std::vector<std::pair<std::string, std::string>> now = {{"ranks", std::to_string(world_size)}};
  for (const ConfigField& f : train_config_fields(asked))
    if (!launch_flag(f.name)) now.emplace_back(f.name, as_recorded(f.name, f.text));
  std::vector<SettingChange> changed;
  for (const auto& [key, value] : now) {
    if (ignored.count(key)) continue;
    auto it = recorded.find(key);
    if (it == recorded.end()) {
      changed.push_back({key, std::nullopt, value});
    } else if (as_recorded(key, as_read(key, it->second)) != value) {
      changed.push_back({key, it->second, value});
    }
  }
  return changed;
}

std::map<std::string, std::string> read_run_settings_file(const std::string& out_dir) {
  return read_settings(run_settings_path(out_dir));
}

std::vector<std::string> update_run_settings_file(const TrainConfig& config, int world_size, bool resumed) {
  std::vector<std::string> lines;
  if (resumed) {
    auto quoted = [](const std::string& v) { return v.empty() ? std::string("\"\"") : v; };
    std::string joined;
    for (const SettingChange& c : changed_run_settings(config, world_size).value_or(std::vector<SettingChange>{}))
      joined += (joined.empty() ? "" : ", ") + c.key + " " + (c.recorded ? quoted(*c.recorded) : "(not recorded)") +
                " -> " + quoted(c.now);
    if (!joined.empty())
      lines.push_back("resume: settings changed since the last launch (" +
                      run_settings_path(config.checkpoint.out_dir) + "): " + joined);
  }
  write_run_settings_file(config, world_size);
  return lines;
}

}  // namespace nd::train
