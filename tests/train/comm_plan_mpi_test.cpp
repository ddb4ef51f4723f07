// nanodist plan's collective list for a tiny GPT equals what real training steps issue under
// mpirun: every device collective of a 2-step run minus those of a 1-step run (one step's worth),
// recorded by a counting comm (tests/dist/counting_comm.h) around the world and all its splits,
// for dp over every rank and, where tp 2 divides the world, tp 2 with and without sequence
// parallelism (with dp = world / 2).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "dist/parallel/plan/comm_plan.h"
#include "tests/dist/counting_comm.h"
#include "train/mpi_data_fixture.h"

namespace nd::train {
namespace {

class CommPlanTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int tp, bool sp, int steps) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.model.n_layer = 2;
    c.model.n_head = 4;
    c.model.n_embd = 128;  // 1.6 MB of f32 parameters: the 1 MB first bucket, then one per large entry
    c.model.block_size = 16;
    c.data.batch_size = 4;
    c.parallel.tp = tp;
    c.parallel.sequence_parallel = sp;
    c.schedule.max_iters = steps;
    c.schedule.eval_interval = 0;
    c.observe.log_interval = 1000;
    c.parallel.bucket_mb = 0.01;  // several buckets after the first
    return c;
  }

  test::CallLog run_counted(const TrainConfig& c) {
    auto log = std::make_shared<test::CallLog>();
    test::CountingComm counting(*comm_, log);
    RunContext ctx;
    ctx.comm = &counting;
    run_training(c, ctx);
    return *log;
  }

  // One step's calls: the 2-step run's less the 1-step run's (start-up and the final evaluation
  // cancel out).
  test::CallLog one_step(int tp, bool sp) {
    const std::string name = "tp" + std::to_string(tp) + (sp ? "sp" : "");
    test::CallLog two = run_counted(config(name + "_2", tp, sp, 2)), one = run_counted(config(name + "_1", tp, sp, 1));
    for (const auto& [key, calls] : one) two[key] -= calls;
    for (auto it = two.begin(); it != two.end();) it = it->second == 0 ? two.erase(it) : std::next(it);
    return two;
  }

  int vocab_size() const {
    std::ifstream file(root_ + "/data/train.bin", std::ios::binary);
    int32_t header[3] = {};
    file.read(reinterpret_cast<char*>(header), sizeof header);
    return header[2];
  }

  test::CallLog planned(int tp, bool sp) const {
    dist::PlanShape s;
    s.n_layer = 2;
    s.n_head = 4;
    s.n_embd = 128;
    s.block_size = 16;
    s.vocab_size = vocab_size();
    s.on_cuda = false;
    s.batch_size = 4;
    s.tp = tp;
    s.dp = comm_->size() / tp;
    s.sequence_parallel = sp;
    s.act_bytes = s.param_bytes = s.grad_bytes = 4;
    s.bucket_mb = 0.01;
    test::CallLog log;
    for (const dist::PlannedCall& call : dist::plan_step(s, dist::default_fit_table(), "native").calls)
      log[{call.op, call.ranks, call.bytes}] += call.calls;
    return log;
  }
};

void expect_same(const test::CallLog& got, const test::CallLog& want) {
  EXPECT_EQ(got, want);
  for (const auto& [key, calls] : got)
    EXPECT_EQ(calls, want.count(key) ? want.at(key) : 0)
        << "issued: " << std::get<0>(key) << " over " << std::get<1>(key) << " ranks, " << std::get<2>(key) << " bytes";
  for (const auto& [key, calls] : want)
    EXPECT_EQ(calls, got.count(key) ? got.at(key) : 0)
        << "planned: " << std::get<0>(key) << " over " << std::get<1>(key) << " ranks, " << std::get<2>(key) << " bytes";
}

TEST_F(CommPlanTest, DataParallelBucketsAreWhatAStepIssues) {
  test::CallLog want = planned(1, false);
  EXPECT_GE(want.size(), 2u) << "the test wants several bucket sizes";
  expect_same(one_step(1, false), want);
}

TEST_F(CommPlanTest, TensorParallelCollectivesAreWhatAStepIssues) {
  if (comm_->size() % 2 != 0) GTEST_SKIP() << "tp 2 does not divide " << comm_->size() << " ranks";
  expect_same(one_step(2, false), planned(2, false));
  expect_same(one_step(2, true), planned(2, true));
}

}  // namespace
}  // namespace nd::train
