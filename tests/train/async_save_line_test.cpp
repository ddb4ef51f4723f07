// The "saved" line of an asynchronous save gives the writer's own time for rank 0's part beside
// the total to the index: the last save of a run is completed only after its final evaluation, so
// the total (200 s in a GPT-2 350M benchmark) says nothing about the write (scripts/bench_ckpt.sh
// reports the writer's time).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "train/trainer.h"
#include "train/train_fixture.h"
#include "process_helpers.h"

namespace nd::train {
namespace {

using testing::TempDir;

TEST(AsyncSaveLine, GivesThePartsWriteTimeBesideTheTotal) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 4;
  c.schedule.lr_decay_iters = 4;
  c.checkpoint.interval = 2;
  c.schedule.eval_iters = 50;  // the final evaluation, which the last save's total includes
  c.checkpoint.async_save = AsyncSave::On;
  std::ostringstream log;
  RunContext context;
  context.log = &log;
  run_training(c, context);
  const std::regex saved(R"(saved \S+ \(.* ([0-9.]+) s \(snapshot [0-9.]+ s.*; part written in ([0-9.]+) s, writer CPU [0-9.]+ s\)\))");
  int lines = 0;
  std::istringstream in(log.str());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("saved ", 0) != 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, saved)) << line;
    EXPECT_LE(std::stod(m[2]), std::stod(m[1]) + 0.05) << "the part is written before the index: " << line;
    ++lines;
  }
  EXPECT_EQ(lines, 2) << log.str();
}

}  // namespace
}  // namespace nd::train
