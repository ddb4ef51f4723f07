// Splitting the parts at the validation cut and renaming them into place.
#include "data/prepare_finish.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "data/prepare_encode.h"
#include "data/token_file_appender.h"
#include "tensor/error.h"

namespace nd {
namespace {

namespace fs = std::filesystem;

// DIR/train.bin for one file, DIR/train_000000.bin, ... for several.
std::vector<std::string> split_names(const std::string& out_dir, const std::string& split, size_t files) {
  std::vector<std::string> names;
  for (size_t i = 0; i < files; ++i) {
    char name[40];
    if (files == 1)
      std::snprintf(name, sizeof name, "%s.bin", split.c_str());
    else
      std::snprintf(name, sizeof name, "%s_%06zu.bin", split.c_str(), i);
    names.push_back((fs::path(out_dir) / name).string());
  }
  return names;
}

// from -> to, unless an earlier run of this step already did it.
void move_into_place(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (!fs::exists(from, ec) && fs::exists(to, ec)) return;
  fs::rename(from, to, ec);
  ND_CHECK_INPUT(!ec, "cannot move " << from << " to " << to << ": " << ec.message());
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

bool is_prepared_split_name(const std::string& name, const std::string& split) {
  if (name == split + ".bin") return true;
  const std::string prefix = split + "_";
  if (name.size() != prefix.size() + 10 || name.compare(0, prefix.size(), prefix) != 0) return false;
  if (name.compare(name.size() - 4, 4, ".bin") != 0) return false;
  for (size_t i = prefix.size(); i < prefix.size() + 6; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

FinishedSplits finish_prepare(const std::string& out_dir, const std::string& work_dir, const PrepareState& state,
                              int64_t vocab_size, double val_fraction, const std::string& source) {
  int64_t n = 0;
  for (int64_t count : state.parts) n += count;
  const int64_t val_tokens = static_cast<int64_t>(std::llround(static_cast<double>(n) * val_fraction));
  if (val_tokens < 1 || val_tokens >= n) {
    std::error_code ec;
    fs::remove_all(work_dir, ec);
    ND_FAIL_INPUT(source << " gives " << n << " tokens, too few to split with val fraction " << val_fraction << " ("
                         << val_tokens << " val tokens)");
  }
  const int64_t cut = n - val_tokens;
  std::vector<std::string> train, val;
  int64_t start = 0;
  for (size_t i = 0; i < state.parts.size(); ++i) {
    const int64_t count = state.parts[i];
    const std::string part = part_path(work_dir, i);
    if (start + count <= cut) {
      if (count > 0) train.push_back(part);
    } else if (start >= cut) {
      val.push_back(part);
    } else {  // the cut falls inside: its tail becomes a file of its own, its head stays
      const std::string tail = (fs::path(work_dir) / "tail.bin").string();
      std::error_code ec;
      if (fs::exists(part, ec)) {
        if (!fs::exists(tail, ec)) copy_token_range(part, cut - start, count, tail);
        truncate_token_file(part, vocab_size, cut - start);
      }
      train.push_back(part);
      val.push_back(tail);
    }
    start += count;
  }
  FinishedSplits out;
  out.train = split_names(out_dir, "train", train.size());
  out.val = split_names(out_dir, "val", val.size());
  out.train_tokens = cut;
  out.val_tokens = val_tokens;
  // Token files of an earlier prepare that this one does not replace would be read with it.
  std::set<std::string> keep(out.train.begin(), out.train.end());
  keep.insert(out.val.begin(), out.val.end());
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(out_dir, ec)) {
    const std::string name = e.path().filename().string();
    if ((is_prepared_split_name(name, "train") || is_prepared_split_name(name, "val")) && !keep.count(e.path().string()))
      fs::remove(e.path(), ec);
  }
  for (size_t i = 0; i < train.size(); ++i) move_into_place(train[i], out.train[i]);
  for (size_t i = 0; i < val.size(); ++i) move_into_place(val[i], out.val[i]);
  move_into_place((fs::path(work_dir) / "tokenizer.txt").string(), (fs::path(out_dir) / "tokenizer.txt").string());
  sync_directory(out_dir);
  fs::remove_all(work_dir, ec);
  return out;
}

}  // namespace nd
