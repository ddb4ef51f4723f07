// The losses of a tensor- or pipeline-parallel fp16 run on the CPU (mpirun -np 2 and 4; np 3 skips)
// are f32 like the one-rank run's: the vocabulary-parallel loss (tp 2) and the last stage's losses
// summed over the pipeline (pp 2) come back off f16's grid on every rank, in the step losses and
// the evaluation, and follow the one-rank fp16 run with the same global batch (rounding apart).
#include <gtest/gtest.h>

#include <cmath>

#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kGlobalBatch = 4;
constexpr int kSteps = 4;

// True when x is a whole multiple of f16's spacing at |x| divided by 4: where a mean of two losses
// rounded to f16 lies, even with one of them a binade lower.
bool on_f16_grid(double x) {
  const double step = std::ldexp(1.0, std::ilogb(x) - 10) / 4;
  return std::fmod(x, step) == 0.0;
}

class F32LossMpiTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int ranks, int tp, int pp) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.precision.dtype = DType::F16;
    c.model.n_layer = 2;
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.parallel.tp = tp;
    c.parallel.pp = pp;
    c.data.batch_size = kGlobalBatch / (ranks / (tp * pp));
    c.data.grad_accum = 2;
    c.schedule.max_iters = c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = kSteps;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    return c;
  }

  void logs_f32_losses(int tp, int pp) {
    if (comm_->size() % (tp * pp) != 0) GTEST_SKIP() << "tp " << tp << " x pp " << pp << " on " << comm_->size();
    const TrainResult one = run_training(config("one_" + std::to_string(comm_->rank()), 1, 1, 1));
    RunContext ctx;
    ctx.comm = comm_.get();
    const TrainResult r =
        run_training(config("tp" + std::to_string(tp) + "_pp" + std::to_string(pp), comm_->size(), tp, pp), ctx);
    ASSERT_EQ(r.step_losses.size(), static_cast<size_t>(kSteps));
    for (size_t i = 0; i < r.step_losses.size(); ++i)
      EXPECT_FALSE(on_f16_grid(r.step_losses[i])) << "rank " << comm_->rank() << " step " << i + 1 << ": "
                                                  << r.step_losses[i];
    EXPECT_FALSE(on_f16_grid(r.last_val_loss)) << "rank " << comm_->rank() << " val loss " << r.last_val_loss;
    expect_close(mean_losses(r.step_losses, *comm_), one.step_losses, 0, 5e-3);
    EXPECT_NEAR(r.last_val_loss, one.last_val_loss, 5e-3 * one.last_val_loss);
  }
};

TEST_F(F32LossMpiTest, TensorParallelFp16LogsF32Losses) { logs_f32_losses(2, 1); }

TEST_F(F32LossMpiTest, PipelineFp16LogsF32Losses) { logs_f32_losses(1, 2); }

}  // namespace
}  // namespace nd::train
