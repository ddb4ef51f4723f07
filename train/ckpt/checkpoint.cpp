// Whole-model checkpoint write and read (through the sharded format of one part), and the
// directory bookkeeping: naming, listing complete checkpoints, temporaries, keeping the newest N.
#include "train/ckpt/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <filesystem>

#include "tensor/error.h"
#include "train/ckpt/checkpoint_index.h"

namespace nd::train {
namespace {

// The index OUT/ckpt_000250.h5 is written as OUT/.ckpt_000250.h5.tmp.<pid> first: the leading
// dot and the suffix keep it out of list_checkpoints() and out of a `ckpt_*.h5` glob alike.
const char* kTemporaryPrefix = ".ckpt_";
const char* kTemporaryMarker = ".h5.tmp.";

// "ckpt_000250.h5" -> 250; -1 for any other name (temporaries included).
int64_t step_of_checkpoint_name(const std::string& name) {
  const std::string prefix = "ckpt_", suffix = ".h5";
  if (name.size() <= prefix.size() + suffix.size()) return -1;
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return -1;
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

}  // namespace

// One rank owns every tensor whole: a checkpoint of one part.
void write_checkpoint(const std::string& path, const CheckpointData& data) {
  std::vector<Tensor> keep;  // f32 copies of tensors stored in another dtype
  std::vector<OwnedSlice> slices;
  const NamedTensors* groups[3] = {&data.params, &data.m, &data.v};
  for (int g = 0; g < 3; ++g)
    for (const auto& [name, tensor] : *groups[g]) {
      ND_CHECK(name.find('/') == std::string::npos, "tensor name '" << name << "' holds a '/'");
      Tensor host = tensor.to(Device::cpu());
      if (host.dtype() != DType::F32) host = host.to(DType::F32);
      keep.push_back(host);
      slices.push_back(OwnedSlice{kCheckpointGroups[g], name, host.shape(), whole(host.shape()), host.data<float>()});
    }
  try {
    remove_checkpoint(path);  // its part would be replaced under its index
    write_checkpoint_part(path, 0, slices);
    write_checkpoint_index(path, 1, data);
  } catch (const Error& e) {
    std::error_code ec;
    std::filesystem::remove_all(parts_directory(path), ec);
    ND_FAIL_INPUT("cannot write checkpoint " << path << ": " << e.message());
  }
}

int remove_checkpoint_temporaries(const std::string& out_dir) {
  int removed = 0;
  DIR* dir = ::opendir(out_dir.c_str());
  if (dir == nullptr) return 0;
  std::vector<std::string> stale;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.rfind(kTemporaryPrefix, 0) == 0 && name.find(kTemporaryMarker) != std::string::npos)
      stale.push_back(out_dir + "/" + name);
  }
  ::closedir(dir);
  for (const std::string& path : stale) removed += std::remove(path.c_str()) == 0 ? 1 : 0;
  // Parts of checkpoints whose index was never written (a save cut short), whole.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".parts";
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    if (step_of_checkpoint_name(name.substr(0, name.size() - suffix.size()) + ".h5") < 0) continue;
    if (std::filesystem::exists(out_dir + "/" + name.substr(0, name.size() - suffix.size()) + ".h5")) continue;
    std::error_code remove_ec;
    removed += std::filesystem::remove_all(entry.path(), remove_ec) > 0 ? 1 : 0;
  }
  return removed;
}

CheckpointData read_checkpoint(const std::string& path) {
  CheckpointReader reader(path);
  CheckpointData data = reader.meta();
  NamedTensors* groups[3] = {&data.params, &data.m, &data.v};
  for (int g = 0; g < 3; ++g)
    for (const std::string& name : reader.names(kCheckpointGroups[g]))
      groups[g]->emplace_back(name, reader.read_full(kCheckpointGroups[g], name));
  return data;
}

std::string checkpoint_path(const std::string& out_dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt_%06lld.h5", static_cast<long long>(step));
  return out_dir + "/" + name;
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  DIR* dir = ::opendir(out_dir.c_str());
  if (dir == nullptr) return out;
  while (dirent* entry = ::readdir(dir)) {
    int64_t step = step_of_checkpoint_name(entry->d_name);
    if (step >= 0) out.emplace_back(step, out_dir + "/" + entry->d_name);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

std::string newest_checkpoint(const std::string& out_dir) {
  auto all = list_checkpoints(out_dir);
  return all.empty() ? "" : all.back().second;
}

void prune_checkpoints(const std::string& out_dir, int keep) {
  if (keep <= 0) return;
  auto all = list_checkpoints(out_dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) remove_checkpoint(all[i].second);
}

std::string resolve_checkpoint(const std::string& file_or_dir) {
  struct stat info;
  ND_CHECK_INPUT(::stat(file_or_dir.c_str(), &info) == 0,
                 "no checkpoint at " << file_or_dir << ": " << std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) return file_or_dir;
  std::string newest = newest_checkpoint(file_or_dir);
  ND_CHECK_INPUT(!newest.empty(), "no checkpoint (ckpt_<step>.h5) in " << file_or_dir);
  return newest;
}

CheckpointData read_newest_checkpoint(const std::string& file_or_dir, std::string& path,
                                      std::vector<std::string>& skipped) {
  struct stat info;
  if (::stat(file_or_dir.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
    path = file_or_dir;
    return read_checkpoint(path);
  }
  auto all = list_checkpoints(file_or_dir);
  std::string last_error;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      CheckpointData data = read_checkpoint(it->second);
      path = it->second;
      return data;
    } catch (const Error& e) {
      last_error = e.message();
      skipped.push_back("skipping checkpoint " + it->second + ": " + e.message());
    }
  }
  path = resolve_checkpoint(file_or_dir);  // the error when there is none
  ND_FAIL_INPUT("none of the " << all.size() << " checkpoint(s) in " << file_or_dir << " can be read: " << last_error);
}

const AttrValue& find_attr(const std::vector<std::pair<std::string, AttrValue>>& attrs, const std::string& name,
                           const std::string& source) {
  for (const auto& [key, value] : attrs)
    if (key == name) return value;
  ND_FAIL_INPUT(source << " has no config field '" << name << "'");
}

int64_t attr_as_int(const AttrValue& value, const std::string& what) {
  ND_CHECK_INPUT(std::holds_alternative<int64_t>(value), what << " is not an integer");
  return std::get<int64_t>(value);
}

double attr_as_double(const AttrValue& value, const std::string& what) {
  if (const int64_t* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  ND_CHECK_INPUT(std::holds_alternative<double>(value), what << " is not a number");
  return std::get<double>(value);
}

std::string attr_as_string(const AttrValue& value, const std::string& what) {
  ND_CHECK_INPUT(std::holds_alternative<std::string>(value), what << " is not a string");
  return std::get<std::string>(value);
}

}  // namespace nd::train
