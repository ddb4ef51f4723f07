// `nanodist sample` under mpirun: every rank checks the command, rank 0 alone prints, so the text
// appears once, equal to what the same command prints run alone.
#include <gtest/gtest.h>

#include "train/process_helpers.h"
#include "train/train_fixture.h"

namespace nd::train::testing {
namespace {

TEST(SampleCli, UnderMpirunRankZeroAlonePrints) {
  TempDir dir;
  write_tiny_data(dir / "data", 3000);
  ASSERT_EQ(run_nanodist("train --data " + (dir / "data") + " --out " + (dir / "out") +
                             " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --max-iters 2"
                             " --eval-interval 0 --eval-iters 1 --warmup-iters 1 --threads 1",
                         dir.path())
                .exit_code,
            0);
  const std::string args = "sample --ckpt " + (dir / "out") + " --prompt 'the ' --tokens 16 --seed 5 --threads 1";
  const CommandResult alone = run_nanodist(args, dir.path());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  ASSERT_EQ(alone.out.rfind("the ", 0), 0u) << alone.out;

  Child child(mpirun(2) + " " + ND_NANODIST_BIN + " " + args, dir / "mpi.out", dir / "mpi.err");
  ASSERT_TRUE(child.wait(120.0)) << "mpirun did not end";
  EXPECT_EQ(child.exit_code(), 0) << child.err();
  EXPECT_EQ(child.out(), alone.out);
}

}  // namespace
}  // namespace nd::train::testing
