// --trace under mpirun: one Chrome trace with a process per rank whose tracks nest, and whose
// comm events are exactly the collectives each rank issued during the traced steps (counted by a
// communicator double under the trainer), under data parallelism and tp 2; the summary has a
// line per rank.
#include <gtest/gtest.h>

#include <sstream>

#include "train/mpi_data_fixture.h"
#include "train/trace_checks.h"

namespace nd::train {
namespace {

class StepTraceMpiTest : public testing::MpiDataTest {
 protected:
  void trace_and_check(int tp) {
    const int np = comm_->size();
    if (np % tp != 0) GTEST_SKIP() << "tp " << tp << " does not divide " << np << " ranks";
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/out_tp" + std::to_string(tp));
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.parallel.tp = tp;
    c.data.batch_size = 2;
    c.schedule.max_iters = 4;
    c.parallel.bucket_mb = 0.005;  // several gradient buckets
    c.observe.trace = root_ + "/trace_tp" + std::to_string(tp) + ".json";
    c.observe.trace_steps = "2:3";
    auto counts = std::make_shared<testing::CountingComm::Counts>();
    testing::CountingComm counting(*comm_, counts);
    std::ostringstream log;
    RunContext context;
    context.comm = &counting;
    context.log = &log;
    run_training(c, context);
    // Each rank's counts, gathered to rank 0 in a fixed order of kinds.
    const std::vector<std::string> kinds = {"all_gather", "allreduce", "broadcast", "reduce_scatter"};
    std::vector<int64_t> all(static_cast<size_t>(np) * kinds.size(), 0);
    for (size_t k = 0; k < kinds.size(); ++k)
      all[static_cast<size_t>(comm_->rank()) * kinds.size() + k] = counts->count(kinds[k]) ? counts->at(kinds[k]) : 0;
    comm_->host_allreduce(all.data(), static_cast<int>(all.size()), dist::HostReduce::Sum);
    if (comm_->rank() != 0) return;
    auto events = testing::read_chrome_trace(c.observe.trace);
    testing::expect_nested_per_track(events);
    for (int r = 0; r < np; ++r) {
      std::map<std::string, int> traced = testing::comm_kinds(events, r);
      for (size_t k = 0; k < kinds.size(); ++k) {
        const int64_t issued = all[static_cast<size_t>(r) * kinds.size() + k];
        EXPECT_EQ(traced.count(kinds[k]) ? traced.at(kinds[k]) : 0, issued) << kinds[k] << " on rank " << r;
      }
      EXPECT_GT(traced["allreduce"], 0) << "rank " << r;
      EXPECT_NE(log.str().find("trace: rank " + std::to_string(r) + ": compute"), std::string::npos) << log.str();
    }
  }
};

TEST_F(StepTraceMpiTest, DataParallelTraceHoldsEveryCollective) { trace_and_check(1); }

TEST_F(StepTraceMpiTest, TensorParallelTraceHoldsEveryCollective) { trace_and_check(2); }

}  // namespace
}  // namespace nd::train
