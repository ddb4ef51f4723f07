// A --fp8 run saved at step 4 (after an evaluation) and resumed gives the uninterrupted run's
// losses and weights bit for bit: the checkpoint carries every quantised tensor's amax history and
// scale (train/ckpt/fp8_checkpoint.h), restored before the first step. Without them the resumed run
// would quantise its first step at scale 1 (the saved scales are checked to be far from 1).
// Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <sstream>

#include "train/ckpt/checkpoint.h"
#include "train/ckpt/fp8_checkpoint.h"
#include "train/ckpt/hdf5_file.h"
#include "train/fp8_run_fixture.h"


namespace nd::train {
namespace {

TrainResult logged_run(const TrainConfig& c, std::string* log_text = nullptr) {
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  TrainResult r = run_training(c, ctx);
  if (log_text != nullptr) *log_text = log.str();
  return r;
}

// An evaluation and a checkpoint every 4 steps, so the evaluation's forwards run between the saved
// step and the next.
class Fp8Resume : public testing::TinyFp8Run<::testing::TestWithParam<const char*>> {
 protected:
  TrainConfig config(const std::string& out) {
    TrainConfig c = tiny_gpu_config(out);
    c.schedule.max_iters = c.schedule.lr_decay_iters = 8;
    c.schedule.eval_interval = 4;
    c.precision.fp8 = true;
    c.checkpoint.async_save = parse_async_save(GetParam());
    return c;
  }
};

TEST_P(Fp8Resume, GivesTheUninterruptedRunBitForBit) {
  const TrainResult whole = logged_run(config("whole"));
  TrainConfig first = config("split");
  first.schedule.max_iters = 4;
  logged_run(first);

  // The saved scales: what the resumed run's first step must quantise with.
  Hdf5File ckpt = Hdf5File::open_read(checkpoint_path(dir_ / "split", 4));
  const std::vector<float> x = ckpt.read_tensor("/state/fp8/scaling/transformer.h.0.attn.c_attn.x").to_float_vector();
  ASSERT_EQ(x.size(), 3u);
  EXPECT_GT(x[0], 4.0f) << "a scale near 1 would not tell a restored state from a fresh one";
  EXPECT_EQ(x[1], 4.0f);  // four amaxes in the ring, the next slot the fifth
  EXPECT_EQ(x[2], 4.0f);
  EXPECT_EQ(ckpt.read_tensor("/state/fp8/amax_history/lm_head.dout").shape()[0], 1024);

  TrainConfig rest = config("split");
  rest.checkpoint.resume = true;
  std::string log;
  const TrainResult resumed = logged_run(rest, &log);
  EXPECT_NE(log.find("--fp8: restored the amax histories and scales of 27 quantised tensors"), std::string::npos)
      << log;
  ASSERT_EQ(resumed.first_step, 4);
  ASSERT_EQ(resumed.step_losses.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(resumed.step_losses[i], whole.step_losses[4 + i]) << "step " << 5 + i;
  EXPECT_EQ(resumed.params_hash, whole.params_hash);
  EXPECT_EQ(resumed.last_val_loss, whole.last_val_loss);
}

// The asynchronous save (pinned host copies written by a thread) and the synchronous one.
INSTANTIATE_TEST_SUITE_P(Saves, Fp8Resume, ::testing::Values("true", "false"));

// The mismatch cases on the GPU: a bf16 checkpoint resumed with --fp8 starts the histories
// afresh, an FP8 checkpoint resumed without --fp8 ignores them, a shorter --fp8-amax-history keeps
// the newest amaxes; each says so in one line.
TEST_P(Fp8Resume, MismatchesSaySo) {
  TrainConfig plain = config("plain");
  plain.precision.fp8 = false;
  plain.schedule.max_iters = 4;
  logged_run(plain);
  TrainConfig with_fp8 = config("plain");
  with_fp8.checkpoint.resume = true;
  std::string log;
  logged_run(with_fp8, &log);
  EXPECT_NE(log.find("holds no FP8 scaling state"), std::string::npos) << log;

  TrainConfig fp8 = config("fp8");
  fp8.schedule.max_iters = 4;
  logged_run(fp8);
  // A shorter --fp8-amax-history than the checkpoint's 1024 keeps the newest amaxes.
  TrainConfig shorter = config("fp8");
  shorter.precision.fp8_amax_history = 2;
  shorter.checkpoint.resume = true;
  const TrainResult r = logged_run(shorter, &log);
  EXPECT_NE(log.find("holds amax histories of 1024 steps, this run keeps 2: the newest amaxes that fit are kept"),
            std::string::npos)
      << log;
  EXPECT_EQ(r.step_losses.size(), 4u);

  TrainConfig without = config("fp8");
  without.precision.fp8 = false;
  without.schedule.max_iters = without.schedule.lr_decay_iters = 12;
  without.checkpoint.resume = true;
  logged_run(without, &log);
  EXPECT_NE(log.find("this run has no --fp8 and does not use it"), std::string::npos) << log;
}

}  // namespace
}  // namespace nd::train
