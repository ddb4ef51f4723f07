// ZeRO 3 (FSDP) and the staged ZeRO 2 over NCCL (mpirun -np 2 or more, one GPU per rank; skipped
// without): in bf16 with f32 masters they give the losses of --zero 0 on the same GPUs (relative
// 1e-2) over 20 steps with clipping and grad-accum 2, with and without --recompute block, with f32
// main gradients too, the step captured as a CUDA graph after its eager steps; every rank ends with
// the same parameters; the captured step replays without allocating. ZeRO 3 again with its
// collectives on the copy engines (--collectives peer), every block in many pieces; there, gathering
// the blocks (in place, two prefetched) gives the bits of ZeRO 2, whose parameters stay whole.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>

#include "tests/common/scoped_env.h"
#include "tests/dist/nccl_test_world.h"
#include "train/mpi_data_fixture.h"

namespace nd::train {
namespace {

class Zero3Nccl : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int zero, const std::string& recompute, const std::string& grad_dtype) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    c.precision.grad_dtype = parse_grad_dtype(grad_dtype);
    c.model.n_layer = 3;
    c.parallel.zero = zero;
    c.model.recompute = parse_recompute(recompute);
    c.data.grad_accum = 2;
    c.optim.grad_clip = 0.05;
    c.schedule.max_iters = 20;
    c.schedule.lr_decay_iters = 20;
    return c;
  }
};

TEST_F(Zero3Nccl, StagesTwoAndThreeMatchZeroZero) {
  SKIP_WITHOUT_GPU();
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  for (const std::string recompute : {"none", "block"}) {
    for (const std::string grad_dtype : {"", "f32"}) {
      const std::string tag = recompute + "_" + (grad_dtype.empty() ? "bf16" : grad_dtype);
      SCOPED_TRACE(tag);
      TrainResult reference = run_training(config("zero0_" + tag, 0, recompute, grad_dtype), ctx);
      for (int zero : {2, 3}) {
        TrainResult r = run_training(config("zero" + std::to_string(zero) + "_" + tag, zero, recompute, grad_dtype), ctx);
        ASSERT_EQ(r.step_losses.size(), reference.step_losses.size());
        for (size_t i = 0; i < r.step_losses.size(); ++i)
          EXPECT_LE(std::abs(r.step_losses[i] - reference.step_losses[i]), 1e-2 * std::abs(reference.step_losses[i]))
              << "zero " << zero << " step " << i + 1;
        EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "zero " << zero << ": parameters differ between ranks";
        EXPECT_GT(r.cuda_graph_replays, 0) << "zero " << zero << ": the step was not captured";
        EXPECT_EQ(r.replay_cuda_mallocs, 0) << "zero " << zero << ": the replays allocate";
      }
    }
  }
}

// ZeRO 3 under --collectives peer: its gathers and reduce-scatters on the copy engines, through
// slots of 4 KB so that every block moves in many pieces (several times the slots, which wrap
// within one call), against --zero 0 on NCCL.
TEST_F(Zero3Nccl, StageThreeOnTheCopyEnginesMatchesZeroZero) {
  SKIP_WITHOUT_GPU();
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  TrainResult reference = run_training(config("zero0_for_peer", 0, "none", ""), ctx);
  ctx.peer_copy_block_bytes = 4096;
  TrainConfig c = config("zero3_peer", 3, "none", "");
  c.parallel.collectives = dist::Algorithm::Peer;
  TrainResult r = run_training(c, ctx);
  ASSERT_EQ(r.step_losses.size(), reference.step_losses.size());
  for (size_t i = 0; i < r.step_losses.size(); ++i)
    EXPECT_LE(std::abs(r.step_losses[i] - reference.step_losses[i]), 1e-2 * std::abs(reference.step_losses[i]))
        << "step " << i + 1;
  EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "parameters differ between ranks";
  EXPECT_GT(r.cuda_graph_replays, 0) << "the step was not captured";
}

// How ZeRO 3 gathers changes no value: straight into shared buffers with this rank's slice read in
// place and two blocks prefetched, over the copy engines, it gives the losses and parameters of ZeRO
// 2, whose parameters stay whole (all-gathered in place after each update), exactly.
TEST_F(Zero3Nccl, GatheredBlocksGiveStageTwosBits) {
  SKIP_WITHOUT_GPU();
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  TrainConfig c = config("zero3_gathered", 3, "block", "");
  c.parallel.collectives = dist::Algorithm::Peer;
  const TrainResult gathered = run_training(c, ctx);
  c = config("zero2_whole", 2, "block", "");
  c.parallel.collectives = dist::Algorithm::Peer;
  const TrainResult whole = run_training(c, ctx);
  EXPECT_EQ(gathered.step_losses, whole.step_losses);
  EXPECT_EQ(gathered.params_hash, whole.params_hash);
  EXPECT_GT(gathered.cuda_graph_replays, 0) << "the step was not captured";
}

}  // namespace
}  // namespace nd::train
