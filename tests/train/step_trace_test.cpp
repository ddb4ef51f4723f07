// --trace on one rank: the summary's interval arithmetic against a hand-made timeline, the trace
// file is valid Chrome JSON (Perfetto's format) whose tracks nest, holding exactly the traced
// steps with their ops, and the summary lines; bad --trace-steps is an input error.
#include <gtest/gtest.h>

#include <sstream>

#include "train/step_trace.h"
#include "train/trace_checks.h"
#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

TEST(StepTrace, SummaryOfAHandMadeTimeline) {
  // step [0, 40]; ops [0, 10] (with [5, 8] inside) and [20, 30]; one collective [8, 25] (us).
  std::vector<op_timer::TraceEvent> events = {{"step 3", "compute", 0, 40},  {"linear", "compute", 0, 10},
                                              {"gelu", "compute", 5, 8},     {"allreduce 1 MB", "dp", 8, 25},
                                              {"linear", "compute", 20, 30}};
  TraceSummary s = summarize_trace(events);
  EXPECT_DOUBLE_EQ(s.window_ms, 0.040);
  EXPECT_DOUBLE_EQ(s.compute_ms, 0.020);
  EXPECT_DOUBLE_EQ(s.comm_ms, 0.017);
  EXPECT_DOUBLE_EQ(s.exposed_comm_ms, 0.010);  // [10, 20]
  EXPECT_DOUBLE_EQ(s.idle_ms, 0.010);          // [30, 40]
}

TEST(StepTrace, StepsParseAndBadOnesAreInputErrors) {
  EXPECT_EQ(parse_trace_steps("5:7"), (std::pair<int64_t, int64_t>{5, 7}));
  for (const char* bad : {"7:5", "0:2", "3", "a:b", "3:4x"}) EXPECT_THROW(parse_trace_steps(bad), Error) << bad;
}

TEST(StepTrace, OneRankTraceIsValidNestedJson) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 5;
  c.observe.trace = dir / "trace.json";
  c.observe.trace_steps = "2:3";
  std::ostringstream log;
  RunContext context;
  context.log = &log;
  run_training(c, context);
  auto events = testing::read_chrome_trace(dir / "trace.json");
  testing::expect_nested_per_track(events);
  std::vector<std::string> steps;
  int ops = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e.pid, 0);
    if (e.cat == "step") steps.push_back(e.name);
    if (e.cat == "op") ++ops;
  }
  EXPECT_EQ(steps, (std::vector<std::string>{"step 2", "step 3"}));
  EXPECT_GT(ops, 20);
  EXPECT_FALSE(std::filesystem::exists(dir / "trace.json.part0"));
  EXPECT_NE(log.str().find("trace: rank 0: compute "), std::string::npos) << log.str();
}

}  // namespace
}  // namespace nd::train
