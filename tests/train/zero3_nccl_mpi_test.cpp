// ZeRO 3 (FSDP) and the staged ZeRO 2 over NCCL (mpirun -np 2 or more, one GPU per rank; skipped
// without): in bf16 with f32 masters they give the losses of --zero 0 on the same GPUs (relative
// 1e-2) over 20 steps with clipping and grad-accum 2, with and without --recompute block, with f32
// main gradients too, the step captured as a CUDA graph after its eager steps; every rank ends with
// the same parameters; the captured step replays without allocating. ZeRO 3 again with its
// collectives on the copy engines (--collectives peer), every block in many pieces; there, under
// f32 main gradients, the widening reduce-scatter changes no bit.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>

#include "dist/peer_comm.h"
#include "tests/dist/nccl_test_world.h"
#include "train/mpi_data_fixture.h"

namespace nd::train {
namespace {

class Zero3Nccl : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int zero, const std::string& recompute, const std::string& grad_dtype) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.device = "cuda";
    c.dtype = "bf16";
    c.grad_dtype = grad_dtype;
    c.n_layer = 3;
    c.zero = zero;
    c.recompute = recompute;
    c.grad_accum = 2;
    c.grad_clip = 0.05;
    c.max_iters = 20;
    c.lr_decay_iters = 20;
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
  ::setenv("NANODIST_PEER_COPY_SLOT_BYTES", "4096", 1);
  TrainConfig c = config("zero3_peer", 3, "none", "");
  c.collectives = "peer";
  TrainResult r = run_training(c, ctx);
  ::unsetenv("NANODIST_PEER_COPY_SLOT_BYTES");
  ASSERT_EQ(r.step_losses.size(), reference.step_losses.size());
  for (size_t i = 0; i < r.step_losses.size(); ++i)
    EXPECT_LE(std::abs(r.step_losses[i] - reference.step_losses[i]), 1e-2 * std::abs(reference.step_losses[i]))
        << "step " << i + 1;
  EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "parameters differ between ranks";
  EXPECT_GT(r.cuda_graph_replays, 0) << "the step was not captured";
}

// Under f32 main gradients the copy engines reduce-scatter the blocks' bf16 gradients into f32
// themselves (Comm::reduce_scatter_widens): the same bits as widening them on the compute stream
// first (NANODIST_PEER_COPY_WIDEN=0), so the same losses and parameters, exactly.
TEST_F(Zero3Nccl, WideningOnTheCopyEnginesChangesNoBit) {
  SKIP_WITHOUT_GPU();
  {  // without peer access both runs would take the same path and prove nothing
    dist::PeerComm probe(test::gpu_world());
    if (!probe.reduce_scatter_widens(dist::ReduceOp::Avg))
      GTEST_SKIP() << "no copy-engine collectives here: " << probe.copy_unusable_reason();
  }
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  ::setenv("NANODIST_PEER_COPY_SLOT_BYTES", "4096", 1);
  TrainConfig c = config("zero3_widened", 3, "block", "f32");
  c.collectives = "peer";
  TrainResult widened = run_training(c, ctx);
  ::setenv("NANODIST_PEER_COPY_WIDEN", "0", 1);
  c.out_dir = root_ + "/zero3_not_widened";
  TrainResult not_widened = run_training(c, ctx);
  ::unsetenv("NANODIST_PEER_COPY_WIDEN");
  ::unsetenv("NANODIST_PEER_COPY_SLOT_BYTES");
  EXPECT_EQ(widened.step_losses, not_widened.step_losses);
  EXPECT_EQ(widened.params_hash, not_widened.params_hash);
}

}  // namespace
}  // namespace nd::train
