// Tensor-parallel training equals single-rank training: tp 2 (np 2) and dp 2 x tp 2 (np 4) give
// the losses of one rank with the same global batch (f32, relative 1e-5) with the native and the
// ring all-reduce, the replicated parameters end bit-identical on every rank, and checkpoints
// (full tensors) move between tp 2 and tp 1 and continue exactly as the uninterrupted run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include "dist/world.h"
#include "train/checkpoint.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kTp = 2;
constexpr int kGlobalBatch = 4;
constexpr int kSteps = 20;

class TpTrainingTest : public testing::MpiDataTest {
 protected:
  bool grid_fits() const { return comm_->size() % kTp == 0; }

  // A tiny model whose heads, width and padded vocabulary split over two ranks; `ranks` ranks at
  // tensor-parallel size `tp` share the global batch over their ranks / tp data-parallel groups.
  TrainConfig config(const std::string& out, int ranks, int tp) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.n_layer = 2;
    c.n_head = 4;
    c.n_embd = 32;
    c.block_size = 16;
    c.tp = tp;
    c.batch_size = kGlobalBatch / (ranks / tp);
    c.max_iters = kSteps;
    c.lr_decay_iters = kSteps;
    c.eval_interval = 0;
    c.eval_iters = 2;
    c.log_interval = 1000;
    c.bucket_mb = 0.01;
    return c;
  }


  // One rank, tp 1, the whole batch: computed by every rank alone, no communicator.
  std::vector<double> reference_losses() const {
    return run_training(config("reference_" + std::to_string(comm_->rank()), 1, 1)).step_losses;
  }

  void expect_close(const std::vector<double>& got, const std::vector<double>& want, size_t first = 0) const {
    ASSERT_EQ(got.size() + first, want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(std::abs(got[i] - want[first + i]), 1e-5 * std::abs(want[first + i]))
          << "step " << first + i + 1 << " on " << comm_->size() << " ranks: " << got[i] << " vs " << want[first + i];
  }

  // True on every rank when `value` is the same on all ranks of `comm`.
  static bool same_everywhere(uint64_t value, dist::Comm& comm) {
    int64_t hi = static_cast<int64_t>(value >> 1), lo = -hi;
    comm.host_allreduce(&hi, 1, dist::HostReduce::Max);
    comm.host_allreduce(&lo, 1, dist::HostReduce::Max);
    return hi == -lo;
  }

  void trains_like_one_rank(const std::string& allreduce) {
    if (!grid_fits()) GTEST_SKIP() << "tp " << kTp << " does not divide " << comm_->size() << " ranks";
    std::vector<double> reference = reference_losses();
    RunContext ctx;
    ctx.comm = comm_.get();
    TrainConfig c = config(allreduce, comm_->size(), kTp);
    c.allreduce = allreduce;
    TrainResult r = run_training(c, ctx);
    expect_close(mean_losses(r.step_losses, *comm_), reference);
    EXPECT_TRUE(same_everywhere(r.replicated_params_hash, *comm_)) << "replicated parameters differ between ranks";
    // The shards differ inside a tp group (otherwise nothing was split)...
    std::unique_ptr<dist::Comm> tp_group = comm_->split(comm_->rank() / kTp, comm_->rank());
    EXPECT_FALSE(same_everywhere(r.params_hash, *tp_group)) << "the tp ranks hold the same shards";
    // ... and agree between the data-parallel replicas of one shard.
    std::unique_ptr<dist::Comm> dp_group = comm_->split(comm_->rank() % kTp, comm_->rank());
    EXPECT_TRUE(same_everywhere(r.params_hash, *dp_group)) << "data-parallel replicas differ";
  }

  // Runs `config` on the first `ranks` ranks (the others wait), from a copy of `from`'s
  // half-way checkpoint, and checks its losses against the uninterrupted reference.
  void resume_on(int ranks, int tp, const std::string& from, const std::string& out,
                 const std::vector<double>& reference) {
    bool member = comm_->rank() < ranks;
    std::unique_ptr<dist::Comm> sub = comm_->split(member ? 0 : 1, comm_->rank());
    if (member) {
      TrainConfig resumed = config(out, ranks, tp);
      if (comm_->rank() == 0) {
        std::filesystem::create_directories(resumed.out_dir);
        std::filesystem::copy_file(checkpoint_path(root_ + "/" + from, kSteps / 2),
                                   checkpoint_path(resumed.out_dir, kSteps / 2));
      }
      sub->barrier();
      resumed.resume = true;
      RunContext sub_ctx;
      sub_ctx.comm = ranks > 1 ? sub.get() : nullptr;
      TrainResult r = run_training(resumed, sub_ctx);
      EXPECT_EQ(r.first_step, kSteps / 2);
      expect_close(ranks > 1 ? mean_losses(r.step_losses, *sub) : r.step_losses, reference, kSteps / 2);
    }
    comm_->barrier();
  }

};

TEST_F(TpTrainingTest, NativeAllreduceMatchesOneRank) { trains_like_one_rank("native"); }

TEST_F(TpTrainingTest, RingAllreduceMatchesOneRank) { trains_like_one_rank("ring"); }

TEST_F(TpTrainingTest, TpTwoCheckpointResumesAtTpOne) {
  if (!grid_fits()) GTEST_SKIP() << "tp " << kTp << " does not divide " << comm_->size() << " ranks";
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("written_tp2", comm_->size(), kTp);
  c.ckpt_interval = kSteps / 2;
  c.keep = 0;
  run_training(c, ctx);
  comm_->barrier();
  resume_on(1, 1, "written_tp2", "resumed_tp1", reference);
}

TEST_F(TpTrainingTest, TpOneCheckpointResumesAtTpTwo) {
  if (!grid_fits()) GTEST_SKIP() << "tp " << kTp << " does not divide " << comm_->size() << " ranks";
  std::vector<double> reference = reference_losses();
  if (comm_->rank() == 0) {
    TrainConfig c = config("written_tp1", 1, 1);
    c.ckpt_interval = kSteps / 2;
    c.keep = 0;
    run_training(c);
  }
  comm_->barrier();
  resume_on(kTp, kTp, "written_tp1", "resumed_tp2", reference);
}

}  // namespace
}  // namespace nd::train
