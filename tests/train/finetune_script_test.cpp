// scripts/finetune.sh end to end on the CPU: a base model trained on one text is fine-tuned on
// another (prepare --tokenizer-from, train --init-from, sample); the new run starts at step 0
// from the base weights (its first loss well below a fresh model's) and the sample continues the
// prompt. A diverging fine-tune passes on train's exit status 3.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "process_helpers.h"
#include "train/run/exit_status.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

const char* kTiny = " --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-interval 0"
                    " --eval-iters 1 --warmup-iters 0 --threads 1";

// `command` through the shell, stdout and stderr apart.
CommandResult run_command(const std::string& command, const TempDir& dir) {
  const std::string out = dir / "script.out", err = dir / "script.err";
  const int status = std::system((command + " > " + out + " 2> " + err).c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp_file(out);
  r.err = slurp_file(err);
  return r;
}

// The loss of the first step record in RUN/metrics.jsonl.
double first_loss(const std::string& run_dir) {
  const std::string metrics = slurp_file(run_dir + "/metrics.jsonl");
  const size_t at = metrics.find("\"loss\":");
  return at == std::string::npos ? NAN : std::atof(metrics.c_str() + at + 7);
}

TEST(FinetuneScript, PrepareTrainSampleFromABaseModel) {
  TempDir dir;
  std::ofstream(dir / "base.txt") << tiny_text(6000);
  std::ofstream(dir / "new.txt") << tiny_text(3000).substr(1000);
  ASSERT_EQ(run_nanodist("prepare --input " + (dir / "base.txt") + " --out " + (dir / "data"), dir.path()).exit_code, 0);
  auto base = run_nanodist("train --data " + (dir / "data") + " --out " + (dir / "base") + kTiny + " --max-iters 60 --lr 1e-2",
                           dir.path());
  ASSERT_EQ(base.exit_code, 0) << base.err;
  auto fresh = run_nanodist("train --data " + (dir / "data") + " --out " + (dir / "fresh") + kTiny + " --max-iters 1",
                            dir.path());
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;

  const std::string script = std::string(ND_SOURCE_DIR) + "/scripts/finetune.sh --nanodist " + ND_NANODIST_BIN +
                             " --from " + (dir / "base") + " --input " + (dir / "new.txt") + " --prompt 'the ' --tokens 20";
  auto r = run_command(script + " --out " + (dir / "ft") + " -- --max-iters 5 --eval-iters 1 --batch-size 4 --threads 1",
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("initialized from " + (dir / "base")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 1/5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nthe "), std::string::npos) << "the sample continues the prompt: " << r.out;
  EXPECT_LT(first_loss(dir / "ft/run"), first_loss(dir / "fresh") - 0.3) << "the fine-tune starts from the base weights";

  auto diverged = run_command(script + " --out " + (dir / "ft2") +
                                  " -- --max-iters 20 --lr 1e30 --min-lr 1e30 --grad-clip 0 --threads 1",
                              dir);
  EXPECT_EQ(diverged.exit_code, kExitDiverged) << diverged.out << diverged.err;
  EXPECT_NE(diverged.out.find("the run diverged"), std::string::npos) << diverged.out;
}

}  // namespace
}  // namespace nd::train::testing
