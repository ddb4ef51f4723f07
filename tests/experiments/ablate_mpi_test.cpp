// nanodist ablate under mpirun: every rank trains each run together over the world
// communicator (data parallel), only rank 0 writes; 1 variant x 1 seed. The 2-rank experiment
// reports what its runs' metrics.jsonl say, and a rerun on all ranks skips both runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>

#include "dist/comm/world.h"
#include "experiments/ablate.h"
#include "experiment_fixture.h"

namespace nd::experiments {
namespace {

using namespace testing;

TEST(AblateMpi, OneVariantOneSeedOnEveryRank) {
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(Device::cpu());
  ASSERT_GE(comm->size(), 2);
  // Rank 0 owns the directory; the others learn its path.
  std::unique_ptr<train::testing::TempDir> dir;
  std::string root;
  if (comm->rank() == 0) {
    dir = std::make_unique<train::testing::TempDir>();
    train::testing::write_tiny_data(*dir / "data");
    root = dir->path();
  }
  int len = static_cast<int>(root.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  root.resize(static_cast<size_t>(len));
  MPI_Bcast(root.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);

  // Batch 4 per rank x 2 ranks.
  ExperimentArgs args = tiny_args(ablate_flag_set(), "ablate", root + "/data", root + "/out",
                                  {"--max-iters", "16", "--seeds", "1", "--variants", "no-warmup"});
  QueueOutcome first = run_ablate(args, *comm, nullptr);
  EXPECT_EQ(first.trained, 2);
  QueueOutcome second = run_ablate(args, *comm, nullptr);
  EXPECT_EQ(second.trained, 0);
  EXPECT_EQ(second.skipped, 2);

  if (comm->rank() == 0) {
    const std::string json = read_text(root + "/out/report.json");
    for (const char* name : {"control", "no-warmup"}) {
      RunFile run = read_run_file(root + "/out/" + name + "/seed0/metrics.jsonl");
      ASSERT_TRUE(run.finished) << name;
      EXPECT_EQ(run.losses.size(), 16u);
      const size_t at = json.find("\"name\":\"" + std::string(name) + "\"");
      ASSERT_NE(at, std::string::npos) << json;
      EXPECT_NEAR(number_after(json, "mean", json.find("\"final_val_loss\"", at)), run.val_losses.back(), 1e-6);
      EXPECT_NE(read_text(root + "/out/" + name + "/seed0/train.log").find("step 16/16"), std::string::npos);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // nobody may still read the files rank 0 removes
}

}  // namespace
}  // namespace nd::experiments
