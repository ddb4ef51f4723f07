// --fp8 at --tp 2 on two GPUs (mpirun -np 2, NCCL; skipped without a GPU of compute capability 8.9+
// per rank), with and without --sequence-parallel, trains like --fp8 on one GPU (each rank's own,
// the same batches) step for step, to FP8's tolerance (below), as one CUDA graph, the replicated
// parameters the same on both ranks. The split tensors' amaxes and the model's parts are checked
// against the one-GPU model directly in tests/dist/fp8_tp_nccl_mpi_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/cuda_test_util.h"
#include "tests/dist/nccl_test_world.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kSteps = 20;
// Per step, relative. The tp 2 run rounds each split sum to bf16 per rank before adding (the
// row-parallel products, the column-parallel input gradients), and FP8's requantisation turns the
// few one-ulp changes that cross a rounding boundary into one-code steps; each update carries them
// on. FP8 runs that differ in rounding alone stay within 1e-2 of each other over 20 steps
// (fp8_training_cuda_test, block recomputation); the split sums sit in every block: twice that.
constexpr double kTolerance = 2e-2;

class Fp8TensorParallelTraining : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int tp, bool sequence_parallel) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.parallel.device = test::training_world().device();  // this rank's GPU, also for the one-GPU run
    c.precision.dtype = DType::BF16;
    c.precision.grad_dtype = DType::F32;
    c.precision.fp8 = true;
    c.model.n_embd = 64;  // 32 a rank at tp 2: the FP8 GEMMs' alignment
    c.parallel.tp = tp;
    c.parallel.sequence_parallel = sequence_parallel;
    c.data.grad_accum = 2;
    c.schedule.max_iters = c.schedule.lr_decay_iters = kSteps;
    c.optim.lr = 1e-2;
    return c;
  }

  void trains_like_one_gpu(bool sequence_parallel) {
    SKIP_WITHOUT_GPU();
    if (comm_->size() != 2) GTEST_SKIP() << "two ranks";
#if NANODIST_WITH_CUDA
    if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
#endif
    const std::string tag = sequence_parallel ? "_sp" : "";
    const TrainResult one = run_training(config("one_gpu" + tag + "_rank" + std::to_string(comm_->rank()), 1, false));
    RunContext ctx;
    ctx.comm = &test::training_world();
    const TrainResult split = run_training(config("tp2" + tag, 2, sequence_parallel), ctx);
    ASSERT_EQ(split.step_losses.size(), one.step_losses.size());
    for (size_t i = 0; i < one.step_losses.size(); ++i)
      EXPECT_LE(std::abs(split.step_losses[i] - one.step_losses[i]), kTolerance * one.step_losses[i])
          << "step " << i + 1 << ": tp 2 " << split.step_losses[i] << ", one GPU " << one.step_losses[i];
    EXPECT_TRUE(same_everywhere(split.replicated_params_hash, *comm_)) << "the replicated parameters differ";
    EXPECT_GT(split.cuda_graph_replays, 0) << "the step was not captured";
  }
};

TEST_F(Fp8TensorParallelTraining, TensorParallelTrainsLikeOneGpu) { trains_like_one_gpu(false); }

TEST_F(Fp8TensorParallelTraining, SequenceParallelTrainsLikeOneGpu) { trains_like_one_gpu(true); }

}  // namespace
}  // namespace nd::train
