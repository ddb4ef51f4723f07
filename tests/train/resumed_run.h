// What the fault tests check of a run that was interrupted and resumed: every loss it logged
// (as text, so bit for bit) is the uninterrupted reference run's at that step, no step is
// missing, and its final weights equal the reference's byte for byte.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include "process_helpers.h"
#include "train/ckpt/checkpoint.h"

namespace nd::train::testing {

// step -> the loss text of every {"step":..,"loss":..} line of a metrics.jsonl (resumed runs
// log some steps twice).
inline std::multimap<int, std::string> logged_losses(const std::string& metrics_path) {
  std::multimap<int, std::string> out;
  std::istringstream lines(slurp_file(metrics_path));
  std::string line;
  while (std::getline(lines, line)) {
    size_t loss = line.find("\"loss\":");
    if (line.rfind("{\"step\":", 0) != 0 || loss == std::string::npos) continue;
    out.emplace(std::stoi(line.substr(8)), line.substr(loss + 7, line.find(',', loss) - loss - 7));
  }
  return out;
}

// `expected`: the reference's logged_losses. REF_DIR and RUN_DIR hold the two runs' outputs,
// each with its checkpoint of step `steps`.
inline void expect_resumed_run_equals_reference(const std::multimap<int, std::string>& expected,
                                                const std::string& ref_dir, const std::string& run_dir, int steps) {
  auto logged = logged_losses(run_dir + "/metrics.jsonl");
  for (const auto& [step, loss] : logged) {
    auto want = expected.find(step);
    ASSERT_NE(want, expected.end()) << "step " << step;
    EXPECT_EQ(loss, want->second) << "step " << step;
  }
  for (int s = 1; s <= steps; ++s) EXPECT_GE(logged.count(s), 1u) << "step " << s << " never logged";
  CheckpointData a = read_checkpoint(checkpoint_path(ref_dir, steps));
  CheckpointData b = read_checkpoint(checkpoint_path(run_dir, steps));
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const Tensor& x = a.params[i].second;
    const Tensor& y = b.params[i].second;
    ASSERT_EQ(x.nbytes(), y.nbytes());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()), 0) << a.params[i].first;
  }
}

}  // namespace nd::train::testing
