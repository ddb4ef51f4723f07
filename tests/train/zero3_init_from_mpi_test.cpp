// --init-from under ZeRO 3 (mpirun -np 2, 3, 4, the MPI backend), where each rank keeps only its
// slices of the blocks' parameters: the source's weights land in every rank's shard. From a
// nanodist run directory and from a Hugging Face GPT-2 directory exported from it, zero 3 on every
// rank holds the source's weights bit for bit before its first step (its step 0 checkpoint), and
// trains with the losses of the one-rank --init-from run (relative 1e-5, the f32 reduction-order
// tolerance of the data-parallel tests) to its final weights (1e-5 + 1e-4 relative); the two
// sources give the same run exactly. At np 4 also zero 3 at tp 2 x dp 2, each rank's slices of its
// tensor-parallel shards.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "train/ckpt/checkpoint_index.h"
#include "train/hugging_face_dir.h"
#include "train/zero_fixture.h"

namespace nd::train {
namespace {

class Zero3InitFrom : public testing::ZeroFixture {
 protected:
  static constexpr int kSourceSteps = 10;

  TrainConfig config(const std::string& out, int ranks, int tp, int zero) const override {
    TrainConfig c = tiny_zero_config(out, ranks, tp, zero, /*n_layer=*/3);
    c.checkpoint.interval = 0;  // one checkpoint, at the end
    return c;
  }

  // A run of `zero` on `ranks` ranks at tp `tp` that starts from `source`, drawn from another seed
  // than the source's so that any weight not loaded would show.
  TrainConfig from(const std::string& source, const std::string& out, int ranks, int tp, int zero) const {
    TrainConfig c = config(out, ranks, tp, zero);
    c.checkpoint.init_from = source;
    c.debug.seed = 99;
    return c;
  }

  // Rank 0 trains the source for kSourceSteps on one rank (root_/source) and exports it as a
  // GPT-2 directory (root_/source_hf).
  void SetUp() override {
    ZeroFixture::SetUp();
    source_ = root_ + "/source";
    source_hf_ = root_ + "/source_hf";
    if (comm_->rank() == 0) {
      TrainConfig c = config("source", 1, 1, 0);
      c.schedule.max_iters = kSourceSteps;
      run_training(c);
      testing::export_as_gpt2(checkpoint_path(source_, kSourceSteps), source_hf_);
    }
    comm_->barrier();
  }

  // The one-rank --init-from run from the source (zero 0, the whole global batch), on rank 0; its
  // losses on every rank.
  std::vector<double> one_rank_reference(const std::string& out) {
    std::vector<double> losses(kSteps, 0.0);
    if (comm_->rank() == 0) {
      const TrainResult r = run_training(from(source_, out, 1, 1, 0));
      EXPECT_EQ(r.step_losses.size(), losses.size());
      for (size_t i = 0; i < losses.size() && i < r.step_losses.size(); ++i) losses[i] = r.step_losses[i];
    }
    MPI_Bcast(losses.data(), kSteps, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return losses;
  }

  // Rank 0: the parameters of two checkpoints equal bit for bit.
  void expect_identical_weights(const std::string& got_ckpt, const std::string& want_ckpt) {
    if (comm_->rank() == 0) {
      CheckpointReader got(got_ckpt), want(want_ckpt);
      EXPECT_EQ(got.names("params"), want.names("params"));
      for (const std::string& name : want.names("params"))
        EXPECT_EQ(got.read_full("params", name).to_double_vector(), want.read_full("params", name).to_double_vector())
            << name;
    }
    comm_->barrier();
  }

  std::string source_, source_hf_;
};

// No step: what zero 3 saves is what it loaded, the source's weights, each slice from its shard.
TEST_F(Zero3InitFrom, ShardsHoldTheSourcesWeightsBitForBit) {
  for (int tp : {1, 2}) {
    if (tp > 1 && comm_->size() != 4) continue;  // tp 2 x dp 2
    for (const std::string& source : {source_, source_hf_}) {
      SCOPED_TRACE("tp " + std::to_string(tp) + ", " + source);
      const std::string out = "loaded_tp" + std::to_string(tp) + (source == source_ ? "_ckpt" : "_hf");
      TrainConfig c = from(source, out, comm_->size(), tp, 3);
      c.schedule.max_iters = 0;
      train(c);
      expect_identical_weights(checkpoint_path(root_ + "/" + out, 0), checkpoint_path(source_, kSourceSteps));
    }
  }
}

TEST_F(Zero3InitFrom, TrainsLikeTheOneRankRun) {
  const std::vector<double> reference = one_rank_reference("reference");
  const TrainResult from_ckpt = train(from(source_, "zero3_ckpt", comm_->size(), 1, 3));
  expect_close(mean_losses(from_ckpt.step_losses, *comm_), reference);
  expect_same_weights(root_ + "/zero3_ckpt", root_ + "/reference", kSteps);
  EXPECT_TRUE(same_everywhere(from_ckpt.params_hash, *comm_)) << "the ranks hold other parameters";

  // The directory exported from the same checkpoint holds the same f32 weights: the same run.
  const TrainResult from_hf = train(from(source_hf_, "zero3_hf", comm_->size(), 1, 3));
  EXPECT_EQ(from_hf.step_losses, from_ckpt.step_losses);
  EXPECT_EQ(from_hf.params_hash, from_ckpt.params_hash);
}

TEST_F(Zero3InitFrom, TrainsLikeTheOneRankRunUnderTensorParallelism) {
  if (comm_->size() != 4) GTEST_SKIP() << "tp 2 x dp 2 needs 4 ranks";
  const std::vector<double> reference = one_rank_reference("reference_for_tp");
  for (const std::string& source : {source_, source_hf_}) {
    SCOPED_TRACE(source);
    const std::string out = source == source_ ? "zero3_tp2_ckpt" : "zero3_tp2_hf";
    const TrainResult r = train(from(source, out, comm_->size(), 2, 3));
    expect_close(mean_losses(r.step_losses, *comm_), reference);
    expect_same_weights(root_ + "/" + out, root_ + "/reference_for_tp", kSteps);
  }
}

}  // namespace
}  // namespace nd::train
