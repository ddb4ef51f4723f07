// Data-parallel training with the hierarchical all-reduce (mpirun -np 4 and 6, nodes of two
// pretended) equals one rank with the whole batch (losses within f32 rounding), and parameters end
// bit-identical on every rank.
#include <gtest/gtest.h>

#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kGlobalBatch = 12;  // divisible by 4 and 6 ranks
constexpr int kSteps = 12;

class DDPHierarchicalTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int ranks) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.data.batch_size = kGlobalBatch / ranks;
    c.schedule.max_iters = kSteps;
    c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = 0;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    c.parallel.bucket_mb = 0.01;  // several buckets, some of them smaller than a node's ranks
    return c;
  }
};

TEST_F(DDPHierarchicalTest, MatchesOneRank) {
  std::vector<double> reference = run_training(config("reference_" + std::to_string(comm_->rank()), 1)).step_losses;
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("hierarchical", comm_->size());
  c.parallel.collectives = dist::Algorithm::Hierarchical;
  c.parallel.ranks_per_node = 2;
  TrainResult r = run_training(c, ctx);
  expect_close(mean_losses(r.step_losses, *comm_), reference);
  EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "parameters differ between ranks";
}

}  // namespace
}  // namespace nd::train
