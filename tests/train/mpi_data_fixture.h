// A test fixture for trainer tests under mpirun: the world communicator, a tiny dataset in a
// temporary directory that rank 0 makes and owns while every rank learns its path, and the checks
// the data- and tensor-parallel training tests share (losses and final weights against the one-rank
// run, values the same on every rank, a checkpoint resumed on fewer ranks).
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/world.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/trainer.h"
#include "train/train_fixture.h"

namespace nd::train::testing {

class MpiDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = dist::make_world_comm(Device::cpu());
    std::string path;
    if (comm_->rank() == 0) {
      dir_ = std::make_unique<TempDir>();
      write_tiny_data(*dir_ / "data");
      path = dir_->path();
    }
    int len = static_cast<int>(path.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path.resize(len);
    MPI_Bcast(path.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
    root_ = path;
  }

  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);  // nobody may still read the files rank 0 removes
    dir_.reset();
  }

  // Each step's loss averaged over the ranks of `comm`: each rank's loss covers its rows (under
  // tp, every rank of a group holds its data-parallel group's loss, so this is the dp mean).
  static std::vector<double> mean_losses(const std::vector<double>& step_losses, dist::Comm& comm) {
    std::vector<double> losses = step_losses;
    comm.host_allreduce(losses.data(), static_cast<int>(losses.size()), dist::HostReduce::Sum);
    for (double& l : losses) l /= comm.size();
    return losses;
  }

  // got[i] against want[first + i], relative `tol` (1e-5: f32 training against the one-rank run).
  void expect_close(const std::vector<double>& got, const std::vector<double>& want, size_t first = 0,
                    double tol = 1e-5) const {
    ASSERT_EQ(got.size() + first, want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(std::abs(got[i] - want[first + i]), tol * std::abs(want[first + i]))
          << "step " << first + i + 1 << " on " << comm_->size() << " ranks: " << got[i] << " vs " << want[first + i];
  }

  // On rank 0: the weights of the checkpoints of step `step` in two run directories (full shapes by
  // name), element by element, to f32 reduction-order tolerance (1e-5 + relative 1e-4).
  void expect_same_weights(const std::string& got_dir, const std::string& want_dir, int64_t step) {
    if (comm_->rank() == 0) {
      CheckpointReader got(checkpoint_path(got_dir, step)), want(checkpoint_path(want_dir, step));
      ASSERT_EQ(got.names("params"), want.names("params"));
      for (const std::string& name : want.names("params")) {
        const std::vector<double> a = got.read_full("params", name).to_double_vector();
        const std::vector<double> b = want.read_full("params", name).to_double_vector();
        ASSERT_EQ(a.size(), b.size()) << name;
        int wrong = 0;
        for (size_t i = 0; i < a.size(); ++i) wrong += std::abs(a[i] - b[i]) <= 1e-5 + 1e-4 * std::abs(b[i]) ? 0 : 1;
        EXPECT_EQ(wrong, 0) << name << ": " << wrong << " of " << a.size() << " elements differ";
      }
    }
    comm_->barrier();
  }

  // True on every rank when `value` is the same on all ranks of `comm`.
  static bool same_everywhere(uint64_t value, dist::Comm& comm) {
    int64_t hi = static_cast<int64_t>(value >> 1), lo = -hi;
    comm.host_allreduce(&hi, 1, dist::HostReduce::Max);
    comm.host_allreduce(&lo, 1, dist::HostReduce::Max);
    return hi == -lo;
  }

  // Runs `resumed` on the first `ranks` ranks (the others wait) from a copy of the checkpoint of
  // step `step` in `from_dir`, and checks its losses against the uninterrupted `reference`.
  void expect_resume_matches(TrainConfig resumed, int ranks, const std::string& from_dir, int64_t step,
                             const std::vector<double>& reference) {
    bool member = comm_->rank() < ranks;
    std::unique_ptr<dist::Comm> sub = comm_->split(member ? 0 : 1, comm_->rank());
    if (member) {
      if (comm_->rank() == 0) {
        std::filesystem::create_directories(resumed.checkpoint.out_dir);
        // The index and its parts.
        const std::string from = checkpoint_path(from_dir, step),
                          to = checkpoint_path(resumed.checkpoint.out_dir, step);
        std::filesystem::copy(parts_directory(from), parts_directory(to), std::filesystem::copy_options::recursive);
        std::filesystem::copy_file(from, to);
      }
      sub->barrier();
      resumed.checkpoint.resume = true;
      RunContext sub_ctx;
      sub_ctx.comm = ranks > 1 ? sub.get() : nullptr;
      TrainResult r = run_training(resumed, sub_ctx);
      EXPECT_EQ(r.first_step, step);
      expect_close(ranks > 1 ? mean_losses(r.step_losses, *sub) : r.step_losses, reference, step);
    }
    comm_->barrier();
  }

  std::unique_ptr<dist::Comm> comm_;
  std::unique_ptr<TempDir> dir_;
  std::string root_;  // the data is root_/data
};

}  // namespace nd::train::testing
