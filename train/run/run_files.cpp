// Opening the data directory and preparing the output directory of a run.
#include "train/run/run_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <unistd.h>

#include "tensor/error.h"

namespace nd::train {

RunData open_run_data(const std::string& data, int64_t vocab_size) { return open_token_dataset(data, vocab_size); }

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
