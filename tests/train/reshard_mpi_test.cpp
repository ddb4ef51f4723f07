// Any layout resumes any other: a run checkpointed by 2 data-parallel ranks continues on 1, whose
// checkpoint continues on 4 (on 2 where there are fewer than 4 ranks), and a tp 2 x dp run's
// checkpoint continues at tp 1; every stretch has the losses of the uninterrupted one-rank run.
// Each rank writes only its own part, and the parts of every checkpoint cover every tensor.
#include <gtest/gtest.h>

#include "mpi_data_fixture.h"

namespace nd::train {
namespace {

constexpr int kSteps = 12;
constexpr int kGlobalBatch = 4;

class ReshardTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(int ranks, int tp, int until) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/run_" + std::to_string(comm_->size()));
    c.model.n_embd = 32;  // tensors above a page: row ranges split over the data-parallel replicas
    c.parallel.tp = tp;
    c.data.batch_size = kGlobalBatch * tp / ranks;
    c.schedule.max_iters = until;
    c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = 0;
    c.observe.log_interval = 1000;
    c.checkpoint.keep = 0;
    return c;
  }

  // Ranks 0 .. ranks - 1 run `c` (resuming when `resume`) and check its losses against
  // reference[from ..]; the others wait.
  void stretch(TrainConfig c, int ranks, bool resume, int from, const std::vector<double>& reference) {
    const bool member = comm_->rank() < ranks;
    std::unique_ptr<dist::Comm> sub = comm_->split(member ? 0 : 1, comm_->rank());
    if (member) {
      c.checkpoint.resume = resume;
      RunContext ctx;
      ctx.comm = ranks > 1 ? sub.get() : nullptr;
      TrainResult r = run_training(c, ctx);
      EXPECT_EQ(r.first_step, from);
      // Under tp every rank of a group logs its dp group's loss: the mean over all ranks is the
      // mean over dp ranks.
      const std::vector<double> got = ranks > 1 ? mean_losses(r.step_losses, *sub) : r.step_losses;
      ASSERT_EQ(got.size(), static_cast<size_t>(c.schedule.max_iters - from));
      for (size_t i = 0; i < got.size(); ++i)  // relative 1e-5: f32 training against the one-rank run
        EXPECT_LE(std::abs(got[i] - reference[from + i]), 1e-5 * std::abs(reference[from + i]))
            << "step " << from + i + 1 << " on " << ranks << " rank(s): " << got[i] << " vs " << reference[from + i];
    }
    comm_->barrier();
  }

  std::vector<double> reference_losses() const {
    TrainConfig c = config(1, 1, kSteps);
    c.checkpoint.out_dir = root_ + "/reference_" + std::to_string(comm_->rank());
    return run_training(c).step_losses;
  }
};

TEST_F(ReshardTest, DataParallelTwoToOneToFour) {
  std::vector<double> reference = reference_losses();
  const int last = comm_->size() >= 4 ? 4 : 2;  // the global batch of 4 splits over 1, 2 or 4 ranks
  stretch(config(2, 1, 4), 2, false, 0, reference);
  // Two parts, each a share of the rows of every large tensor.
  EXPECT_EQ(read_part_manifest(checkpoint_path(config(2, 1, 4).checkpoint.out_dir, 4), 0).empty(), false);
  EXPECT_EQ(read_part_manifest(checkpoint_path(config(2, 1, 4).checkpoint.out_dir, 4), 1).empty(), false);
  stretch(config(1, 1, 8), 1, true, 4, reference);
  stretch(config(last, 1, kSteps), last, true, 8, reference);
}

TEST_F(ReshardTest, TensorParallelTwoToOne) {
  if (comm_->size() % 2 != 0) GTEST_SKIP() << "tp 2 needs an even number of ranks";
  std::vector<double> reference = reference_losses();
  stretch(config(comm_->size(), 2, 6), comm_->size(), false, 0, reference);
  stretch(config(1, 1, kSteps), 1, true, 6, reference);
}

}  // namespace
}  // namespace nd::train
