// ZeRO 3 (FSDP) and the staged ZeRO 2 over NCCL (mpirun -np 2 or more, one GPU per rank; skipped
// without): in bf16 with f32 masters they give the losses of --zero 0 on the same GPUs (relative
// 1e-2) over 20 steps with clipping and grad-accum 2, with and without --recompute block, with f32
// main gradients too, the step captured as a CUDA graph after its eager steps; every rank ends with
// the same parameters; the captured step replays without allocating. ZeRO 3 again with its
// collectives on the copy engines (--collectives peer), every block in many pieces; there, under
// f32 main gradients, the widening reduce-scatter changes no bit, nor does adding later
// micro-batches into the gradient shard on the copy engines, nor how the blocks are gathered (in
// place or whole, one or two prefetched).
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

  // Trains `c` with environment switch `name` at "1" and at "0" (out_dir + "_on" and "_off"), which
  // must give the same losses and parameters, exactly.
  void expect_switch_changes_no_bit(TrainConfig c, const char* name, const RunContext& ctx) {
    SCOPED_TRACE(name);
    const std::string out = c.checkpoint.out_dir;
    test::ScopedEnv on(name, "1");
    c.checkpoint.out_dir = out + "_on";
    const TrainResult with = run_training(c, ctx);
    on.set("0");
    c.checkpoint.out_dir = out + "_off";
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
  c.parallel.collectives = dist::Collectives::Peer;
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
  c.parallel.collectives = dist::Collectives::Peer;
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
    c.parallel.collectives = dist::Collectives::Peer;
    c.data.grad_accum = 3;
    c.schedule.max_iters = 8;
    c.schedule.lr_decay_iters = 8;
    expect_switch_changes_no_bit(c, "NANODIST_PEER_COPY_ACCUMULATE", ctx);
  }
}

// How ZeRO 3 gathers changes no value: straight into shared buffers with this rank's slice read in
// place (the default), whole blocks through the slots (NANODIST_ZERO3_IN_PLACE=0), and with one
// block prefetched instead of two (NANODIST_ZERO3_PREFETCH=1) give the same losses and
// parameters, exactly, over the copy engines.
TEST_F(Zero3Nccl, HowBlocksAreGatheredChangesNoBit) {
  SKIP_WITHOUT_GPU();
  RunContext ctx;
  ctx.comm = &test::gpu_world();
  TrainConfig c = config("zero3_in_place", 3, "block", "");
  c.parallel.collectives = dist::Collectives::Peer;
  TrainResult in_place = run_training(c, ctx);
  TrainResult whole, one_prefetch;
  {
    test::ScopedEnv old_gathers("NANODIST_ZERO3_IN_PLACE", "0");
    c.checkpoint.out_dir = root_ + "/zero3_whole_blocks";
    whole = run_training(c, ctx);
  }
  {
    test::ScopedEnv one("NANODIST_ZERO3_PREFETCH", "1");
    c.checkpoint.out_dir = root_ + "/zero3_one_prefetch";
    one_prefetch = run_training(c, ctx);
  }
  EXPECT_EQ(in_place.step_losses, whole.step_losses);
  EXPECT_EQ(in_place.params_hash, whole.params_hash);
  EXPECT_EQ(in_place.step_losses, one_prefetch.step_losses);
  EXPECT_EQ(in_place.params_hash, one_prefetch.params_hash);
  EXPECT_GT(in_place.cuda_graph_replays, 0) << "the step was not captured";
}

}  // namespace
}  // namespace nd::train
