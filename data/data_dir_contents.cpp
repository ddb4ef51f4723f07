// Entries are judged by name and, for token files, by the magic of nanodist's header, so that a
// nanoGPT train.bin (raw u16 tokens) beside someone's text counts as theirs, not prepare's.
#include "data/data_dir_contents.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "data/prepare.h"
#include "data/prepare_finish.h"
#include "data/token_file.h"

namespace nd {
namespace fs = std::filesystem;

namespace {

bool has_nanodist_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  int32_t magic = 0;
  in.read(reinterpret_cast<char*>(&magic), sizeof(magic));
  return in.good() && magic == kTokenFileMagic;
}

bool is_split_name(const std::string& name) {
  return is_prepared_split_name(name, "train") || is_prepared_split_name(name, "val");
}

// The same file or directory, however it was spelled.
bool same_entry(const fs::path& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

}  // namespace

std::vector<std::string> entries_not_from_prepare(const std::string& dir, const std::vector<std::string>& inputs) {
  std::vector<std::string> foreign;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "tokenizer.txt" || name == kPrepareWorkDir || name[0] == '.') continue;  // hidden: no one's data
    if (is_split_name(name) && has_nanodist_magic(e.path())) continue;
    if (std::any_of(inputs.begin(), inputs.end(), [&](const std::string& in) { return same_entry(e.path(), in); }))
      continue;
    foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

std::string token_file_in(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool llmc_shard = name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0 &&
                            (name.find("_train_") != std::string::npos || name.find("_val_") != std::string::npos);
    if (is_split_name(name) || llmc_shard) names.push_back(name);
  }
  return names.empty() ? "" : *std::min_element(names.begin(), names.end());
}

}  // namespace nd
