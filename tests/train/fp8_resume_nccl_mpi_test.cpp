// A --fp8 run on two GPUs (mpirun -np 2, NCCL) saved at step 4 and resumed gives the uninterrupted
// run's losses and weights bit for bit, at dp 2 (the replicas agree on every amax, so the one saved
// copy of the histories resumes both), at pp 2 (each stage saves and restores the quantised
// tensors it holds), at tp 2 (the group agrees on the split tensors' amaxes, so both ranks restore
// the one copy) and at dp 2 under ZeRO 3 (the blocks' weights gathered for the FP8 casts). Skips
// without a GPU of compute capability 8.9+ per rank.
#include <gtest/gtest.h>

#include <sstream>

#include "kernels/cuda_test_util.h"
#include "tests/dist/nccl_test_world.h"
#include "train/ckpt/hdf5_file.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class Fp8ResumeNccl : public testing::MpiDataTest {
 protected:
  struct Layout {
    int pp = 1, tp = 1, zero = 0;
  };

  TrainConfig config(const std::string& out, const Layout& layout) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    c.precision.grad_dtype = DType::F32;
    c.precision.fp8 = true;
    c.model.n_embd = 32;
    c.parallel.pp = layout.pp;
    c.parallel.tp = layout.tp;
    c.parallel.zero = layout.zero;
    c.data.grad_accum = 2;
    c.schedule.max_iters = c.schedule.lr_decay_iters = 8;
    c.schedule.eval_interval = 4;
    c.optim.lr = 1e-2;
    return c;
  }

  void resumes_like_the_uninterrupted_run(const std::string& name, const Layout& layout) {
    SKIP_WITHOUT_GPU();
    if (comm_->size() != 2) GTEST_SKIP() << "two ranks";
#if NANODIST_WITH_CUDA
    if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
#endif
    RunContext ctx;
    ctx.comm = &test::training_world();
    const TrainResult whole = run_training(config(name + "_whole", layout), ctx);
    TrainConfig first = config(name + "_split", layout);
    first.schedule.max_iters = 4;
    run_training(first, ctx);
    TrainConfig rest = config(name + "_split", layout);
    rest.checkpoint.resume = true;
    std::ostringstream log;
    ctx.log = &log;
    const TrainResult resumed = run_training(rest, ctx);
    ASSERT_EQ(resumed.first_step, 4);
    ASSERT_EQ(resumed.step_losses.size(), 4u);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(resumed.step_losses[i], whole.step_losses[4 + i]) << "step " << 5 + i << " on rank " << comm_->rank();
    EXPECT_EQ(resumed.params_hash, whole.params_hash) << "rank " << comm_->rank();
    if (comm_->rank() != 0) return;
    EXPECT_NE(log.str().find("--fp8: restored the amax histories and scales of"), std::string::npos) << log.str();
    // Every stage's tensors are in the checkpoint: the first block's and the head's.
    Hdf5File ckpt = Hdf5File::open_read(checkpoint_path(root_ + "/" + name + "_split", 4));
    EXPECT_EQ(ckpt.read_tensor("/state/fp8/scaling/transformer.h.0.attn.c_attn.x").numel(), 3);
    EXPECT_EQ(ckpt.read_tensor("/state/fp8/scaling/transformer.h.1.mlp.c_proj.dout").numel(), 3);
    EXPECT_EQ(ckpt.read_tensor("/state/fp8/scaling/lm_head.w").numel(), 3);
  }
};

TEST_F(Fp8ResumeNccl, DataParallel) { resumes_like_the_uninterrupted_run("dp2", {}); }

TEST_F(Fp8ResumeNccl, Pipeline) { resumes_like_the_uninterrupted_run("pp2", {/*pp=*/2}); }

TEST_F(Fp8ResumeNccl, TensorParallel) { resumes_like_the_uninterrupted_run("tp2", {/*pp=*/1, /*tp=*/2}); }

TEST_F(Fp8ResumeNccl, ZeroThree) { resumes_like_the_uninterrupted_run("zero3", {/*pp=*/1, /*tp=*/1, /*zero=*/3}); }

}  // namespace
}  // namespace nd::train
