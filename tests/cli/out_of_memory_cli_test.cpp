// A run whose sizes do not fit the host ends in one `nanodist: error:` line naming what did not
// fit and exit status 1, not a std::terminate (status 134) from inside an OpenMP region. The
// address space is capped with `ulimit -v`, so the outcome does not depend on the machine's
// memory: a context of 100000 asks the CPU attention for a 40 GB score matrix.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/data/temp_dir.h"

namespace nd {
namespace {

struct Outcome {
  int status = -1;  // the exit status; -1 when killed by a signal
  std::string err;
};

// `nanodist ARGS` through the shell with its address space capped at `kib` KiB.
Outcome run_capped(const std::string& args, long kib, const TempDir& dir) {
  const std::string command = "ulimit -v " + std::to_string(kib) + " && exec " + ND_NANODIST_BIN + " " + args +
                              " > " + dir.file("out.txt") + " 2> " + dir.file("err.txt");
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(dir.file("err.txt"))};
}

TEST(OutOfMemory, HugeContextOnTheCpuIsOneErrorLine) {
  TempDir dir;
  const std::string prepare = std::string(ND_NANODIST_BIN) + " prepare --random-tokens 1100000 --vocab-size 16 --out " +
                              dir.file("ids") + " > /dev/null";
  ASSERT_EQ(std::system(prepare.c_str()), 0);
  const Outcome r = run_capped("train --data " + dir.file("ids") + " --out " + dir.file("run") +
                                   " --device cpu --block-size 100000 --batch-size 1 --n-layer 1 --n-head 1"
                                   " --n-embd 16 --max-iters 1 --warmup-iters 0 --eval-interval 0 --threads 1",
                               8L << 20, dir);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("nanodist: error: out of host memory: attention forward (sequence length 100000", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("40.0 GB of scratch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

}  // namespace
}  // namespace nd
