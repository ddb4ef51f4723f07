// The training loop in-process on a tiny model: loss goes down, metrics.jsonl has its records,
// resume is bit-exact (20 straight steps == 10 + resume + 10, with dropout and accumulation),
// keep-N, --max-seconds, and the errors a resume or bad data must raise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/token_file.h"
#include "train/ckpt/checkpoint.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;
using testing::tiny_config;
using testing::write_tiny_data;

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string error_of(const TrainConfig& c) {
  try {
    run_training(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Trainer, LearnsAndLogsMetrics) {
  TempDir dir;
  write_tiny_data(dir / "data");
  TrainConfig c = tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 30;
  c.optim.lr = 1e-2;
  c.optim.min_lr = 1e-3;
  c.schedule.lr_decay_iters = 30;
  c.schedule.eval_interval = 10;
  c.observe.log_interval = 10;
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  TrainResult r = run_training(c, ctx);
  ASSERT_EQ(r.step_losses.size(), 30u);
  EXPECT_LT(r.step_losses.back(), r.step_losses.front() - 0.3) << "the loss must drop on an easy text";
  EXPECT_EQ(r.steps_done, 30);
  EXPECT_EQ(r.tokens, 30 * 4 * 16);
  EXPECT_TRUE(std::isfinite(r.best_val_loss));
  EXPECT_EQ(r.last_checkpoint, dir / "out/ckpt_000030.h5");
  EXPECT_NE(log.str().find("step  1/30 | loss "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("GFLOP/s"), std::string::npos);

  auto lines = lines_of(dir / "out/metrics.jsonl");
  // steps 1, 10, 20, 30; evals at 10, 20, 30; the final record.
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0].rfind("{\"step\":1,\"loss\":", 0), 0u) << lines[0];
  for (const char* key : {"\"lr\":", "\"grad_norm\":", "\"ms\":", "\"tok_per_s\":", "\"mfu\":"})
    EXPECT_NE(lines[0].find(key), std::string::npos) << key;
  EXPECT_EQ(lines[2].rfind("{\"step\":10,\"val_loss\":", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("\"train_loss\":"), std::string::npos);
  EXPECT_EQ(lines.back().rfind("{\"final\":true,\"best_val_loss\":", 0), 0u) << lines.back();
  EXPECT_NE(lines.back().find("\"tokens\":1920}"), std::string::npos) << lines.back();
}

// The parameter hash is the caller's choice (the commands turn it off: it copies and hashes every
// parameter on the host); the run is the same either way. --no-checkpoint with a background writer
// asked for (--async-save true) trains alike and writes no checkpoint.
TEST(Trainer, HashAndCheckpointsOnlyWhenAsked) {
  TempDir dir;
  write_tiny_data(dir / "data");
  auto run = [&](const std::string& out, bool hash, bool no_checkpoint) {
    TrainConfig c = tiny_config(dir / "data", dir / out);
    c.schedule.max_iters = 4;
    c.schedule.lr_decay_iters = 4;
    c.checkpoint.disabled = no_checkpoint;
    c.checkpoint.async_save = AsyncSave::On;
    RunContext ctx;
    ctx.hash_parameters = hash;
    return run_training(c, ctx);
  };
  const TrainResult hashed = run("hashed", true, false);
  const TrainResult again = run("again", true, true);
  const TrainResult plain = run("plain", false, true);
  ASSERT_EQ(hashed.step_losses.size(), 4u);
  EXPECT_NE(hashed.params_hash, 0u);
  EXPECT_EQ(again.params_hash, hashed.params_hash);
  EXPECT_EQ(again.replicated_params_hash, hashed.replicated_params_hash);
  EXPECT_EQ(plain.params_hash, 0u);
  EXPECT_EQ(plain.replicated_params_hash, 0u);
  EXPECT_EQ(plain.step_losses, hashed.step_losses);
  EXPECT_EQ(hashed.last_checkpoint, checkpoint_path(dir / "hashed", 4));
  EXPECT_TRUE(list_checkpoints(dir / "again").empty());
  EXPECT_TRUE(list_checkpoints(dir / "plain").empty());
  EXPECT_TRUE(plain.last_checkpoint.empty());
}

TEST(Trainer, ResumeIsBitExact) {
  TempDir dir;
  write_tiny_data(dir / "data");
  TrainConfig c = tiny_config(dir / "data", dir / "straight");
  c.model.dropout = 0.1;  // the dropout stream must resume where it stopped
  c.data.grad_accum = 2;
  c.schedule.max_iters = 20;
  TrainResult straight = run_training(c);
  ASSERT_EQ(straight.step_losses.size(), 20u);

  c.checkpoint.out_dir = dir / "split";
  c.schedule.max_iters = 10;
  TrainResult first = run_training(c);
  c.schedule.max_iters = 20;
  c.checkpoint.resume = true;
  TrainResult second = run_training(c);
  EXPECT_EQ(second.first_step, 10);
  ASSERT_EQ(first.step_losses.size(), 10u);
  ASSERT_EQ(second.step_losses.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(first.step_losses[i], straight.step_losses[i]) << "step " << i;
    EXPECT_EQ(second.step_losses[i], straight.step_losses[10 + i]) << "step " << 10 + i;
  }
  EXPECT_EQ(second.tokens, straight.tokens);
  EXPECT_EQ(second.best_val_loss, straight.best_val_loss);
  // The final parameters agree bit for bit too.
  CheckpointData a = read_checkpoint(straight.last_checkpoint), b = read_checkpoint(second.last_checkpoint);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i)
    EXPECT_EQ(a.params[i].second.to_float_vector(), b.params[i].second.to_float_vector()) << a.params[i].first;
}

TEST(Trainer, KeepsTheNewestCheckpoints) {
  TempDir dir;
  write_tiny_data(dir / "data");
  TrainConfig c = tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 8;
  c.checkpoint.interval = 2;
  c.checkpoint.keep = 2;
  run_training(c);
  auto ckpts = list_checkpoints(dir / "out");
  ASSERT_EQ(ckpts.size(), 2u);
  EXPECT_EQ(ckpts[0].first, 6);
  EXPECT_EQ(ckpts[1].first, 8);
}

TEST(Trainer, MaxSecondsStopsWithAFinalEvalAndCheckpoint) {
  TempDir dir;
  write_tiny_data(dir / "data");
  TrainConfig c = tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 1000;
  c.schedule.max_seconds = 1e-6;
  TrainResult r = run_training(c);
  EXPECT_EQ(r.steps_done, 1);
  EXPECT_TRUE(std::isfinite(r.best_val_loss));
  EXPECT_EQ(newest_checkpoint(dir / "out"), dir / "out/ckpt_000001.h5");
}

TEST(Trainer, ResumeRefusesAnotherModelOrVocabulary) {
  TempDir dir;
  write_tiny_data(dir / "data");
  TrainConfig c = tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 2;
  run_training(c);

  TrainConfig wider = c;
  wider.checkpoint.resume = true;
  wider.schedule.max_iters = 4;
  wider.model.n_embd = 32;
  std::string e = error_of(wider);
  EXPECT_NE(e.find("model shape mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find("n_embd 16 in the checkpoint vs 32 now"), std::string::npos) << e;

  // Other data: a text with more distinct characters gives a larger vocabulary.
  PrepareOptions options;
  options.out_dir = dir / "data2";
  options.val_fraction = 0.2;
  prepare_text(testing::tiny_text(3000) + "XYZ!?", "tiny2", options);
  TrainConfig other = c;
  other.checkpoint.resume = true;
  other.schedule.max_iters = 4;
  other.data.dir = dir / "data2";
  e = error_of(other);
  EXPECT_NE(e.find("vocabulary mismatch"), std::string::npos) << e;
}

TEST(Trainer, BadDataIsAnError) {
  TempDir dir;
  TrainConfig c = tiny_config(dir / "data", dir / "out");
  EXPECT_NE(error_of(c).find("does not exist"), std::string::npos);

  write_tiny_data(dir / "data", 6000);
  std::filesystem::remove(dir / "data/val.bin");
  EXPECT_NE(error_of(c).find("val.bin"), std::string::npos) << error_of(c);

  // Fewer than block_size + 1 tokens in a split.
  write_tiny_data(dir / "short", 60);
  TrainConfig s = tiny_config(dir / "short", dir / "out");
  s.model.block_size = 16;
  std::string e = error_of(s);
  EXPECT_NE(e, "");
  EXPECT_NE(e.find("17"), std::string::npos) << "the message names block_size + 1: " << e;
}

}  // namespace
}  // namespace nd::train
