// Shared pieces of the train tests: a fresh temporary directory, a tiny prepared dataset, a tiny
// model config, and running the nanodist binary with stderr captured.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "train/config.h"

namespace nd::train::testing {

// A new empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "nd_train_test_XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Text of `chars` bytes from a small vocabulary of words, deterministic.
inline std::string tiny_text(int chars) {
  static const char* words[] = {"the", "king", "and", "queen", "of", "rome", "shall", "speak", "now", "to", "thee"};
  std::mt19937 rng(7);
  std::string text;
  while (static_cast<int>(text.size()) < chars) {
    text += words[rng() % 11];
    text += (rng() % 9 == 0) ? "\n" : " ";
  }
  text.resize(static_cast<size_t>(chars));
  return text;
}

// DIR/train.bin, val.bin, tokenizer.txt from tiny_text(chars) with a char tokenizer.
inline void write_tiny_data(const std::string& dir, int chars = 6000) {
  PrepareOptions options;
  options.out_dir = dir;
  options.tokenizer = "char";
  options.val_fraction = 0.2;
  prepare_text(tiny_text(chars), "tiny", options);
}

// The mean of the last n of a run's step losses: one step's noise is not what a test compares.
inline double mean_of_last(const std::vector<double>& losses, size_t n) {
  return std::accumulate(losses.end() - static_cast<std::ptrdiff_t>(n), losses.end(), 0.0) / static_cast<double>(n);
}

// A model and run small enough for a test: 2 layers, width 16, context 16, batch 4.
inline TrainConfig tiny_config(const std::string& data_dir, const std::string& out_dir) {
  TrainConfig c;
  c.data.dir = data_dir;
  c.checkpoint.out_dir = out_dir;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 16;
  c.model.block_size = 16;
  c.data.batch_size = 4;
  c.schedule.max_iters = 20;
  c.schedule.warmup_iters = 3;
  c.schedule.lr_decay_iters = 20;
  c.schedule.eval_interval = 0;
  c.schedule.eval_iters = 2;
  c.observe.log_interval = 5;
  return c;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr are kept apart: errors must go to stderr
  std::string err;
};

// Runs `ND_NANODIST_BIN <args>` through the shell.
inline CommandResult run_nanodist(const std::string& args, const std::string& scratch_dir) {
  std::string out_path = scratch_dir + "/cmd_stdout.txt", err_path = scratch_dir + "/cmd_stderr.txt";
  std::string command = std::string(ND_NANODIST_BIN) + " " + args + " > " + out_path + " 2> " + err_path;
  int status = std::system(command.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& path) {
    std::string text;
    if (std::FILE* f = std::fopen(path.c_str(), "r")) {
      std::array<char, 4096> buf;
      size_t n;
      while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) text.append(buf.data(), n);
      std::fclose(f);
    }
    return text;
  };
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

// The command failed with exactly one stderr line `nanodist: error: ...` containing `needle`.
inline void expect_cli_error(const CommandResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0) << "stdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_EQ(r.err.rfind("nanodist: error: ", 0), 0u) << r.err;
  size_t newline = r.err.find('\n');
  EXPECT_TRUE(newline != std::string::npos && newline + 1 == r.err.size()) << "expected one line: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

}  // namespace nd::train::testing
