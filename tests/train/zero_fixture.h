// What the ZeRO trainer tests under mpirun share (zero_mpi_test: stages 1 and 2; zero3_mpi_test:
// stages 2 and 3; zero3_init_from_mpi_test): training on the world communicator, two checkpoints'
// weights compared, and the two checkpoint round trips between a stage on every rank and zero 0 on
// one rank, each against the uninterrupted one-rank losses.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "train/ckpt/checkpoint_index.h"
#include "train/mpi_data_fixture.h"

namespace nd::train::testing {

class ZeroFixture : public MpiDataTest {
 protected:
  static constexpr int kSteps = 20;

  static constexpr int kGlobalBatch = 12;  // divisible by 1, 2, 3 and 4 data-parallel ranks

  // The test's tiny run writing to `out`, on `ranks` ranks at tp `tp` and ZeRO stage `zero`.
  virtual TrainConfig config(const std::string& out, int ranks, int tp, int zero) const = 0;

  // What both tests' runs share: `n_layer` blocks 32 wide, kGlobalBatch sequences of 16 tokens a
  // step in two micro-batches over the data-parallel ranks, kSteps steps, clipping below the
  // gradient norm (the sharded norm decides every step), no evaluation until the end.
  TrainConfig tiny_zero_config(const std::string& out, int ranks, int tp, int zero, int n_layer) const {
    TrainConfig c = tiny_config(root_ + "/data", root_ + "/" + out);
    c.model.n_layer = n_layer;
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.model.block_size = 16;
    c.parallel.tp = tp;
    c.parallel.zero = zero;
    c.data.grad_accum = 2;
    c.data.batch_size = kGlobalBatch / (ranks / tp);
    c.schedule.max_iters = kSteps;
    c.schedule.lr_decay_iters = kSteps;
    c.optim.grad_clip = 0.05;
    c.schedule.eval_interval = 0;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    return c;
  }

  TrainResult train(const TrainConfig& c) {
    RunContext ctx;
    ctx.comm = comm_.get();
    return run_training(c, ctx);
  }

  std::vector<double> one_rank_losses() {
    return run_training(config("reference_" + std::to_string(comm_->rank()), 1, 1, 0)).step_losses;
  }

  // Stage `zero` on every rank writes step kSteps / 2; one rank at zero 0 goes on from it.
  void expect_checkpoint_resumes_at_zero_zero_on_one_rank(int zero) {
    const std::vector<double> reference = one_rank_losses();
    const std::string written = "written_zero" + std::to_string(zero);
    TrainConfig c = config(written, comm_->size(), 1, zero);
    c.checkpoint.interval = kSteps / 2;
    c.checkpoint.keep = 0;
    train(c);
    comm_->barrier();
    expect_resume_matches(config("resumed_zero0", 1, 1, 0), 1, root_ + "/" + written, kSteps / 2, reference);
  }

  // One rank at zero 0 writes step kSteps / 2; every rank at stage `zero` goes on from it.
  void expect_one_rank_checkpoint_resumes_at(int zero) {
    const std::vector<double> reference = one_rank_losses();
    if (comm_->rank() == 0) {
      TrainConfig c = config("written_one_rank", 1, 1, 0);
      c.checkpoint.interval = kSteps / 2;
      c.checkpoint.keep = 0;
      run_training(c);
    }
    comm_->barrier();
    expect_resume_matches(config("resumed_zero" + std::to_string(zero), comm_->size(), 1, zero), comm_->size(),
                          root_ + "/written_one_rank", kSteps / 2, reference);
  }
};

}  // namespace nd::train::testing
