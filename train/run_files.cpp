// Opening the data directory and preparing the output directory of a run.
#include "train/run_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <unistd.h>

#include "data/atomic_file.h"
#include "train/checkpoint_model.h"

namespace nd::train {

RunData open_run_data(const std::string& dir) {
  std::error_code ec;
  ND_CHECK_INPUT(std::filesystem::is_directory(dir, ec),
                 "data directory " << dir << " does not exist (make it with nanodist prepare --out " << dir << ")");
  RunData data;
  data.train = TokenFile::open_shared(dir + "/train.bin");
  data.val = TokenFile::open_shared(dir + "/val.bin");
  data.tokenizer_text = read_whole_file(dir + "/tokenizer.txt");
  int64_t tokenizer_vocab = tokenizer_from_text(data.tokenizer_text, dir + "/tokenizer.txt")->vocab_size();
  data.vocab_size = data.train->vocab_size();
  ND_CHECK_INPUT(data.val->vocab_size() == data.vocab_size,
                 "vocabulary mismatch: " << dir << "/train.bin has " << data.vocab_size << " tokens, val.bin has "
                                         << data.val->vocab_size());
  ND_CHECK_INPUT(tokenizer_vocab == data.vocab_size,
                 "vocabulary mismatch: " << dir << "/train.bin has " << data.vocab_size << " tokens, tokenizer.txt has "
                                         << tokenizer_vocab);
  return data;
}

void prepare_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ND_CHECK_INPUT(!ec, "cannot create output directory " << dir << ": " << ec.message());
  ND_CHECK_INPUT(std::filesystem::is_directory(dir, ec), "output path " << dir << " is not a directory");
  std::string probe = dir + "/.nanodist_write_probe." + std::to_string(::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  ND_CHECK_INPUT(f != nullptr, "output directory " << dir << " is not writable: " << std::strerror(errno));
  std::fclose(f);
  std::remove(probe.c_str());
}

}  // namespace nd::train
