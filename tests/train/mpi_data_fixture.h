// A test fixture for trainer tests under mpirun: the world communicator, and a tiny dataset in a
// temporary directory that rank 0 makes and owns while every rank learns its path.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/world.h"
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

  std::unique_ptr<dist::Comm> comm_;
  std::unique_ptr<TempDir> dir_;
  std::string root_;  // the data is root_/data
};

}  // namespace nd::train::testing
