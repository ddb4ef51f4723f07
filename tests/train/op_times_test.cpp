// The op timer end to end on the CPU: `nanodist train --op-times` prints a table of the ops of the
// timed steps (every step after the first two), whose times add up to no more than the steps' wall
// time, with FLOP rates for the GEMMs; without the flag nothing changes.
#include <gtest/gtest.h>

#include <regex>

#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::run_nanodist;
using testing::TempDir;

std::string train_args(const TempDir& dir) {
  return "train --data " + (dir / "data") + " --out " + (dir / "out") +
         " --n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --max-iters 6 --eval-interval 3"
         " --eval-iters 1 --warmup-iters 1 --lr-decay-iters 6 --dropout 0.1";
}

class OpTimes : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_tiny_data(dir / "data", 3000); }
  TempDir dir;
};

TEST_F(OpTimes, TableOfTheTimedStepsWhenAsked) {
  auto r = run_nanodist(train_args(dir) + " --op-times", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& out = r.out;
  EXPECT_NE(out.find("op times (--op-times): mean of 4 steps"), std::string::npos) << out;
  // Each op of the step, forward and backward, the linears by their shapes (16 -> 48 is qkv).
  for (const char* op : {"linear 16->48", "linear backward 16->48", "attention ", "attention backward ",
                         "layernorm ", "dropout ", "cross_entropy ", "embedding backward ", "optimizer ",
                         "zero_grad "})
    EXPECT_NE(out.find(op), std::string::npos) << op << " missing from:\n" << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(linear 16->48 +[0-9]+ .*FLOP/s)"))) << out;
  // Evaluations are not timed: the qkv linear runs once per layer and step (2 layers).
  std::smatch calls;
  ASSERT_TRUE(std::regex_search(out, calls, std::regex(R"(\nlinear 16->48 +([0-9]+) )"))) << out;
  EXPECT_EQ(calls[1], "2");
  std::smatch total;
  ASSERT_TRUE(std::regex_search(out, total, std::regex(R"(all timed ops +[0-9.]+ +([0-9.]+)%)"))) << out;
  const double share = std::stod(total[1]);
  EXPECT_GT(share, 0.0);
  EXPECT_LE(share, 100.5);  // synchronous CPU kernels inside the steps' wall time
}

TEST_F(OpTimes, NoTableByDefault) {
  auto r = run_nanodist(train_args(dir), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("op times"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: 6 steps"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nd::train
