// ZeRO 3 (FSDP) and the staged ZeRO 2 over NCCL (mpirun -np 2 or more, one GPU per rank; skipped
// without): in bf16 with f32 masters they give the losses of --zero 0 on the same GPUs (relative
// 1e-2) over 20 steps with clipping and grad-accum 2, with and without --recompute block, with f32
// main gradients too, the step captured as a CUDA graph after its eager steps; every rank ends with
// the same parameters; the captured step replays without allocating. ZeRO 3 again with its
// collectives on the copy engines (--collectives peer), every block in many pieces; there, under
// f32 main gradients, the widening reduce-scatter changes no bit, nor does adding later
// micro-batches into the gradient shard on the copy engines; and gathering the blocks (in place,
// two prefetched) gives the bits of ZeRO 2, whose parameters stay whole.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>

#include "dist/comm/peer_comm.h"
#include "tests/common/scoped_env.h"
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

  // Trains `c` with environment switch `name` at "1" and at "0" (out_dir + "_on" and "_off"), which
  // must give the same losses and parameters, exactly.
  void expect_switch_changes_no_bit(TrainConfig c, const char* name, const RunContext& ctx) {
    SCOPED_TRACE(name);
    const std::string out = c.out_dir;
    test::ScopedEnv on(name, "1");
    c.out_dir = out + "_on";
    const TrainResult with = run_training(c, ctx);
    on.set("0");
    c.out_dir = out + "_off";
    const TrainResult without = run_training(c, ctx);
    EXPECT_EQ(with.step_losses, without.step_losses);
    EXPECT_EQ(with.params_hash, without.params_hash);
    EXPECT_GT(with.cuda_graph_replays, 0) << "the step was not captured";
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
  test::ScopedEnv slots("NANODIST_PEER_COPY_SLOT_BYTES", "4096");
  TrainConfig c = config("zero3_peer", 3, "none", "");
  c.collectives = "peer";
  TrainResult r = run_training(c, ctx);
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
  test::ScopedEnv slots("NANODIST_PEER_COPY_SLOT_BYTES", "4096");
  TrainConfig c = config("zero3_widened", 3, "block", "f32");
  c.collectives = "peer";
  expect_switch_changes_no_bit(c, "NANODIST_PEER_COPY_WIDEN", ctx);
}

// Under f32 main gradients with grad-accum 3, the copy engines add the second and third micro-batches'
// reduce-scatters into the f32 gradient shard themselves (Comm::reduce_scatter_accumulates: the sum
// kernel's out + scaled sum); NANODIST_PEER_COPY_ACCUMULATE=0 lands them beside the staging buffer
// and adds them in on the compute stream instead. The same bits, at ZeRO 2 and 3.
TEST_F(Zero3Nccl, AccumulatingOnTheCopyEnginesChangesNoBit) {
  SKIP_WITHOUT_GPU();
  {  // without peer access both runs would take the landing path and prove nothing
    dist::PeerComm probe(test::gpu_world());
    if (!probe.reduce_scatter_accumulates(dist::ReduceOp::Avg, DType::BF16, DType::F32))
      GTEST_SKIP() << "no copy-engine collectives here: " << probe.copy_unusable_reason();
  }
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  test::ScopedEnv slots("NANODIST_PEER_COPY_SLOT_BYTES", "4096");
  for (int zero : {2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    TrainConfig c = config("zero" + std::to_string(zero) + "_accumulated", zero, "none", "f32");
    c.collectives = "peer";
    c.grad_accum = 3;
    c.max_iters = 8;
    c.lr_decay_iters = 8;
    expect_switch_changes_no_bit(c, "NANODIST_PEER_COPY_ACCUMULATE", ctx);
  }
}

// How ZeRO 3 gathers changes no value: straight into shared buffers with this rank's slice read in
// place and two blocks prefetched, over the copy engines, it gives the losses and parameters of ZeRO
// 2, whose parameters stay whole (all-gathered in place after each update), exactly.
TEST_F(Zero3Nccl, GatheredBlocksGiveStageTwosBits) {
  SKIP_WITHOUT_GPU();
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  TrainConfig c = config("zero3_gathered", 3, "block", "");
  c.collectives = "peer";
  const TrainResult gathered = run_training(c, ctx);
  c = config("zero2_whole", 2, "block", "");
  c.collectives = "peer";
  const TrainResult whole = run_training(c, ctx);
  EXPECT_EQ(gathered.step_losses, whole.step_losses);
  EXPECT_EQ(gathered.params_hash, whole.params_hash);
  EXPECT_GT(gathered.cuda_graph_replays, 0) << "the step was not captured";
}

}  // namespace
}  // namespace nd::train
