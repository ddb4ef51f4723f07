// Shared pieces of the experiment tests: the flags of a tiny ablation or sweep (1 layer, width
// 16, context 16, batch 4), reading numbers out of the JSON lines and files the runs wrote,
// independently of the library's own reader.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/experiment_args.h"
#include "train/train_fixture.h"

namespace nd::experiments::testing {

// ablate or sweep flags for `data` -> `out`, on a tiny model, plus `extra` (steps among them).
inline ExperimentArgs tiny_args(const cli::FlagSet& set, const std::string& command, const std::string& data,
                                const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {command, "--data", data, "--out", out, "--n-layer", "1", "--n-head", "1",
                                   "--n-embd", "16", "--block-size", "16", "--batch-size", "4", "--lr", "1e-2", "--min-lr", "1e-3", "--warmup-iters", "4", "--eval-interval",
                                   "12", "--eval-iters", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_experiment_args(set, static_cast<int>(argv.size()), argv.data());
}

inline std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The number after `"key":` at or after `from` in `text` (NaN for null, or when absent).
inline double number_after(const std::string& text, const std::string& key, size_t from = 0) {
  size_t at = text.find("\"" + key + "\":", from);
  if (at == std::string::npos) return std::numeric_limits<double>::quiet_NaN();
  at += key.size() + 3;
  if (text.compare(at, 4, "null") == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::stod(text.substr(at));
}

// What one run's metrics.jsonl says, read line by line.
struct RunFile {
  std::vector<double> losses, grad_norms, lrs, val_losses;
  double best_val_loss = 0;
  bool finished = false;
};

inline RunFile read_run_file(const std::string& path) {
  RunFile r;
  for (const std::string& line : lines_of(path)) {
    if (line.find("\"final\":true") != std::string::npos) {
      r.finished = true;
      r.best_val_loss = number_after(line, "best_val_loss");
    } else if (line.find("\"val_loss\"") != std::string::npos) {
      r.val_losses.push_back(number_after(line, "val_loss"));
    } else {
      r.losses.push_back(number_after(line, "loss"));
      r.grad_norms.push_back(number_after(line, "grad_norm"));
      r.lrs.push_back(number_after(line, "lr"));
    }
  }
  return r;
}

inline double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

inline double sample_sd(const std::vector<double>& v) {
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace nd::experiments::testing
