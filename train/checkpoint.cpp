// Checkpoint write (built in memory, then temporary name, fsync, rename) and read, and the directory
// bookkeeping: naming, listing complete files, keeping the newest N.
#include "train/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd::train {
namespace {

const char* kStateGroup = "/state";

// AtomicFileWriter writes OUT/ckpt_000250.h5 as OUT/.ckpt_000250.h5.tmp.<pid> first: the leading
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

void write_named(Hdf5File& file, const std::string& group, const NamedTensors& tensors) {
  file.create_group(group);
  for (const auto& [name, tensor] : tensors) {
    ND_CHECK(name.find('/') == std::string::npos, "tensor name '" << name << "' holds a '/'");
    file.write_tensor(group + "/" + name, tensor);
  }
}

NamedTensors read_named(const Hdf5File& file, const std::string& group) {
  NamedTensors out;
  for (const std::string& name : file.list(group)) out.emplace_back(name, file.read_tensor(group + "/" + name));
  return out;
}

void write_contents(Hdf5File& file, const CheckpointData& data) {
  file.create_group("/config");
  for (const auto& [name, value] : data.config) file.set_attr("/config", name, value);
  write_named(file, "/params", data.params);
  write_named(file, "/optimizer/m", data.m);
  write_named(file, "/optimizer/v", data.v);
  const CheckpointState& s = data.state;
  file.create_group(kStateGroup);
  file.set_attr(kStateGroup, "step", s.step);
  file.set_attr(kStateGroup, "optimizer_step", s.optimizer_step);
  file.set_attr(kStateGroup, "dropout_seed", static_cast<int64_t>(s.dropout_seed));
  file.set_attr(kStateGroup, "dropout_stream", static_cast<int64_t>(s.dropout_stream));
  file.set_attr(kStateGroup, "dropout_offset", static_cast<int64_t>(s.dropout_offset));
  file.set_attr(kStateGroup, "data_step", static_cast<int64_t>(s.data_step));
  file.set_attr(kStateGroup, "world_size", s.world_size);
  file.set_attr(kStateGroup, "best_val_loss", s.best_val_loss);
  file.set_attr(kStateGroup, "tokens", s.tokens);
  file.write_string("/tokenizer", data.tokenizer_text);
}

}  // namespace

// The file is built in memory, then written by AtomicFileWriter (temporary, fsync, rename,
// directory fsync): HDF5 never holds a half-written file on disk, so a full disk is a plain
// write error and leaves no HDF5 state behind.
void write_checkpoint(const std::string& path, const CheckpointData& data) {
  try {
    std::vector<char> image;
    {
      int64_t bytes = static_cast<int64_t>(data.tokenizer_text.size());
      for (const NamedTensors* group : {&data.params, &data.m, &data.v})
        for (const auto& named : *group) bytes += named.second.numel() * 4;
      Hdf5File file = Hdf5File::create_in_memory(path, bytes);
      write_contents(file, data);
      image = file.image();
    }
    AtomicFileWriter writer(path);
    writer.write(image.data(), image.size());
    writer.commit();
  } catch (const Error& e) {
    ND_FAIL("cannot write checkpoint " << path << ": " << e.message());
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
  return removed;
}

CheckpointData read_checkpoint(const std::string& path) {
  Hdf5File file = Hdf5File::open_read(path);
  for (const char* group : {"/config", "/params", "/optimizer/m", "/optimizer/v", "/state", "/tokenizer"})
    ND_CHECK_INPUT(file.exists(group), path << " is not a nanodist checkpoint: it has no " << group);
  CheckpointData data;
  for (const std::string& name : file.attr_names("/config")) data.config.emplace_back(name, file.attr("/config", name));
  data.params = read_named(file, "/params");
  data.m = read_named(file, "/optimizer/m");
  data.v = read_named(file, "/optimizer/v");
  CheckpointState& s = data.state;
  s.step = file.attr_int(kStateGroup, "step");
  s.optimizer_step = file.attr_int(kStateGroup, "optimizer_step");
  s.dropout_seed = static_cast<uint64_t>(file.attr_int(kStateGroup, "dropout_seed"));
  s.dropout_stream = static_cast<uint64_t>(file.attr_int(kStateGroup, "dropout_stream"));
  s.dropout_offset = static_cast<uint64_t>(file.attr_int(kStateGroup, "dropout_offset"));
  s.data_step = static_cast<uint64_t>(file.attr_int(kStateGroup, "data_step"));
  s.world_size = file.attr_int(kStateGroup, "world_size");
  s.best_val_loss = file.attr_double(kStateGroup, "best_val_loss");
  s.tokens = file.attr_int(kStateGroup, "tokens");
  data.tokenizer_text = file.read_string("/tokenizer");
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
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i)
    ND_CHECK(std::remove(all[i].second.c_str()) == 0,
             "cannot remove old checkpoint " << all[i].second << ": " << std::strerror(errno));
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
