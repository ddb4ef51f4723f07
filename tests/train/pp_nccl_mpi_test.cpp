// Pipeline parallelism on NCCL under mpirun, one rank per GPU (np 2): pp 2 with GPipe, 1F1B,
// zero-bubble and interleaved (2 chunks per rank) trains like one GPU with the same batch and micro-batches (f32, relative 1e-5 over
// 20 steps), the step replayed as a CUDA graph after its eager steps (the sends and receives are
// stream work). The world is the one `nanodist train` makes. Skips where there is no GPU per rank.
#include <gtest/gtest.h>

#include "tests/dist/nccl_test_world.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kSteps = 20;

class PpNcclTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int pp) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::F32;
    c.model.n_layer = 4;
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.model.block_size = 16;
    c.parallel.pp = pp;
    c.data.batch_size = 4;
    c.data.grad_accum = 4;
    c.schedule.max_iters = kSteps;
    c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = 10;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    c.checkpoint.overwrite = true;
    return c;
  }

  void trains_like_one_gpu(const std::string& schedule) {
    SKIP_WITHOUT_GPU();
    if (comm_->size() != 2) GTEST_SKIP() << "pp 2 on 2 ranks";
    dist::Comm& world = test::training_world();
    // The one-GPU reference on this rank's own GPU, the one its pipeline stage runs on.
    TrainConfig reference = config("one_gpu_" + std::to_string(comm_->rank()), 1);
    reference.parallel.device = world.device();
    TrainResult one = run_training(reference);
    RunContext ctx;
    ctx.comm = &world;
    TrainConfig c = config("pp2_" + schedule, 2);
    c.parallel.pp_schedule = parse_pipeline_kind(schedule);
    if (schedule == "interleaved") c.parallel.pp_virtual = 2;
    TrainResult r = run_training(c, ctx);
    expect_close(mean_losses(r.step_losses, *comm_), one.step_losses);
    EXPECT_NEAR(r.last_val_loss, one.last_val_loss, 1e-5 * one.last_val_loss);
    EXPECT_GT(r.cuda_graph_replays, 0) << "the pipeline step was not captured";
    EXPECT_EQ(r.replay_cuda_mallocs, 0);
  }
};

// GPipe's first backward receives its gradient in a group of its own, after the last forward's
// activation has gone (train/pipeline_plan.h): posted together they hung GPT-2 XL on NCCL.
TEST_F(PpNcclTest, GPipeMatchesOneGpu) { trains_like_one_gpu("gpipe"); }

TEST_F(PpNcclTest, OneFOneBMatchesOneGpu) { trains_like_one_gpu("1f1b"); }

TEST_F(PpNcclTest, ZeroBubbleMatchesOneGpu) { trains_like_one_gpu("zb"); }

TEST_F(PpNcclTest, InterleavedMatchesOneGpu) { trains_like_one_gpu("interleaved"); }

}  // namespace
}  // namespace nd::train
