// --zero 3 with --fp8 on two GPUs (mpirun -np 2, NCCL; skipped without a GPU of compute capability
// 8.9+ per rank): the FP8 casts read the blocks' parameters as gathered, and the amax histories are
// agreed over the data-parallel ranks as at zero 0. So zero 3 gives zero 2's losses and weights bit
// for bit (its gathers change no value; zero 2 keeps the parameters whole), with and without
// --recompute block, as one CUDA graph, every rank with the same weights; and it follows zero 0 to
// the tolerance zero3_nccl_mpi_test holds bf16 to (relative 1e-2 a step: zero 0 sums a step's two
// micro-batches before its all-reduce and its clipping norm in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/cuda_test_util.h"
#include "tests/dist/nccl_test_world.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class Zero3Fp8Nccl : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int zero, nn::Recompute recompute) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    c.precision.grad_dtype = DType::F32;
    c.precision.fp8 = true;
    c.model.n_layer = 3;
    c.model.n_embd = 32;
    c.model.recompute = recompute;
    c.parallel.zero = zero;
    c.data.grad_accum = 2;
    c.optim.grad_clip = 0.05;
    c.optim.lr = 1e-2;
    c.schedule.max_iters = c.schedule.lr_decay_iters = 20;
    return c;
  }
};

TEST_F(Zero3Fp8Nccl, ZeroThreeGivesZeroTwosBitsAndFollowsZeroZero) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
#endif
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  for (nn::Recompute recompute : {nn::Recompute::None, nn::Recompute::Block}) {
    const std::string tag = recompute == nn::Recompute::None ? "none" : "block";
    SCOPED_TRACE("recompute " + tag);
    const TrainResult zero0 = run_training(config("zero0_" + tag, 0, recompute), ctx);
    const TrainResult zero2 = run_training(config("zero2_" + tag, 2, recompute), ctx);
    const TrainResult zero3 = run_training(config("zero3_" + tag, 3, recompute), ctx);
    EXPECT_EQ(zero3.step_losses, zero2.step_losses);
    EXPECT_EQ(zero3.params_hash, zero2.params_hash);
    ASSERT_EQ(zero3.step_losses.size(), zero0.step_losses.size());
    for (size_t i = 0; i < zero0.step_losses.size(); ++i)
      EXPECT_LE(std::abs(zero3.step_losses[i] - zero0.step_losses[i]), 1e-2 * std::abs(zero0.step_losses[i]))
          << "step " << i + 1;
    EXPECT_TRUE(same_everywhere(zero3.params_hash, *comm_)) << "the ranks hold other parameters";
    EXPECT_GT(zero3.cuda_graph_replays, 0) << "the step was not captured";
  }
}

}  // namespace
}  // namespace nd::train
