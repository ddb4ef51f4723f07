// Experiment files: a good file's base and variants; each bad case an error naming its line;
// settings layered (command line over base, variant over both, x-multipliers); --variants
// selection and --ladder sizes.
#include <gtest/gtest.h>

#include <fstream>

#include "cli/train_flags.h"
#include "experiments/ablate.h"
#include "experiments/experiment_args.h"
#include "experiments/experiment_file.h"
#include "experiments/sweep.h"
#include "tensor/error.h"
#include "train/train_fixture.h"

namespace nd::experiments {
namespace {

using train::testing::TempDir;

ExperimentSpec parse(const std::string& text) {
  return parse_experiment(text, "x.conf", ablate_flag_set(), cli::train_flag_set());
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExperimentFile, BaseThenVariants) {
  ExperimentSpec s = parse(
      "# a comment\n"
      "n_layer = 12   # underscores read as dashes\n"
      "seeds = 2\n"
      "\n"
      "[no-ln]\n"
      "no-layernorm = true\n"
      "[hot]\n"
      "lr = x10\n"
      "min-lr = 0.5\n");
  ASSERT_EQ(s.base.size(), 2u);
  EXPECT_EQ(s.base[0].key, "n-layer");
  EXPECT_EQ(s.base[0].value, "12");
  EXPECT_EQ(s.base[0].where, "x.conf:2");
  EXPECT_EQ(s.base[1].key, "seeds");
  ASSERT_EQ(s.variants.size(), 2u);
  EXPECT_EQ(s.variants[0].name, "no-ln");
  EXPECT_EQ(s.variants[0].where, "x.conf:5");
  ASSERT_EQ(s.variants[1].settings.size(), 2u);
  EXPECT_EQ(s.variants[1].settings[0].value, "x10");
  EXPECT_EQ(s.variants[1].settings[1].where, "x.conf:9");
}

TEST(ExperimentFile, EachBadCaseNamesItsLine) {
  EXPECT_NE(error_of("n-layer = 2\nbogus = 3\n").find("unknown key 'bogus' at x.conf:2"), std::string::npos);
  EXPECT_NE(error_of("[a]\nseeds = 3\n").find("unknown key 'seeds' at x.conf:2"), std::string::npos)
      << "a variant sets train flags only";
  EXPECT_NE(error_of("[a]\nlr = 1\n[b]\nlr = 2\n[a]\nlr = 3\n").find("duplicate variant [a] at x.conf:5 (first at "
                                                                     "x.conf:1)"),
            std::string::npos);
  EXPECT_NE(error_of("[a]\nlr = 1\nlr = 2\n").find("duplicate key 'lr' at x.conf:3"), std::string::npos);
  EXPECT_NE(error_of("").find("experiment x.conf is empty"), std::string::npos);
  EXPECT_NE(error_of("# only a comment\n\n").find("is empty"), std::string::npos);
  EXPECT_NE(error_of("[a]\n[b]\nlr = 1\n").find("variant [a] at x.conf:1 sets nothing"), std::string::npos);
  EXPECT_NE(error_of("[a]\nlr = 1\n[b]\n").find("variant [b] at x.conf:3 sets nothing"), std::string::npos);
  EXPECT_NE(error_of("lr = fast\n").find("'lr' at x.conf:1"), std::string::npos);
  EXPECT_NE(error_of("[a]\nn-layer = 2.5\n").find("'n-layer' at x.conf:2"), std::string::npos);
  EXPECT_NE(error_of("[a]\ndevice = x2\n").find("only numeric flags can be scaled"), std::string::npos);
  EXPECT_NE(error_of("lr = x10\n").find("'lr' at x.conf:1"), std::string::npos) << "no multiplier in the base";
  EXPECT_NE(error_of("just words\n").find("expected 'key = value' or '[name]' at x.conf:1"), std::string::npos);
  EXPECT_NE(error_of("[a b]\nlr = 1\n").find("bad variant name 'a b' at x.conf:1"), std::string::npos);
  EXPECT_NE(error_of("[control]\nlr = 1\n").find("[control] at x.conf:1"), std::string::npos);
  EXPECT_NE(error_of("[a\nlr = 1\n").find("expected '[name]' at x.conf:1"), std::string::npos);
  EXPECT_NE(error_of("out = /tmp/x\n").find("unknown key 'out' at x.conf:1"), std::string::npos);
}

TEST(ExperimentArgs, CommandLineOverBaseVariantOverBoth) {
  TempDir dir;
  const std::string file = dir / "e.conf";
  std::ofstream(file) << "lr = 0.002\nn-layer = 3\nseeds = 2\n[hot]\nlr = x10\nwarmup-iters = x0.25\n[deep]\nn-layer = 8\n";
  const std::string experiment = "--experiment=" + file;
  const char* argv[] = {"ablate", "--data", "d", "--out", "o", experiment.c_str(), "--n-layer", "4",
                        "--warmup-iters", "10"};
  ExperimentArgs args = parse_experiment_args(ablate_flag_set(), 10, argv);
  EXPECT_EQ(args.flags.get_int("seeds"), 2);
  train::TrainConfig control = variant_config(args.flags, nullptr);
  EXPECT_DOUBLE_EQ(control.optim.lr, 0.002);
  EXPECT_EQ(control.model.n_layer, 4) << "the command line overrides the base";
  train::TrainConfig hot = variant_config(args.flags, &args.spec.variants[0]);
  EXPECT_DOUBLE_EQ(hot.optim.lr, 0.02);
  EXPECT_EQ(hot.schedule.warmup_iters, 3) << "x0.25 of 10, rounded";
  EXPECT_EQ(hot.model.n_layer, 4);
  train::TrainConfig deep = variant_config(args.flags, &args.spec.variants[1]);
  EXPECT_EQ(deep.model.n_layer, 8) << "a variant overrides the command line";
  EXPECT_DOUBLE_EQ(deep.optim.lr, 0.002);
}

TEST(ExperimentArgs, AScaledValueBelowTheSmallestDoubleIsAnInputError) {
  // 1e-300 x 1e-20 is subnormal: printing it back once threw std::out_of_range, not nd::Error.
  TempDir dir;
  const std::string file = dir / "e.conf";
  std::ofstream(file) << "lr = 1e-300\n[tiny]\nlr = x1e-20\n";
  const std::string experiment = "--experiment=" + file;
  const char* argv[] = {"ablate", "--data", "d", "--out", "o", experiment.c_str()};
  ExperimentArgs args = parse_experiment_args(ablate_flag_set(), 6, argv);
  try {
    variant_config(args.flags, &args.spec.variants[0]);
    ADD_FAILURE() << "a subnormal lr was taken";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input()) << e.what();
    EXPECT_NE(e.message().find("expected a number"), std::string::npos) << e.message();
  }
}

TEST(ExperimentArgs, AScaledValuePastTheLargestDoubleIsAnInputError) {
  // 1e300 x 1e300 is inf: the variant trained with lr = inf (and the ablation called it diverged).
  TempDir dir;
  const std::string file = dir / "e.conf";
  std::ofstream(file) << "lr = 1e300\n[hot]\nlr = x1e300\n";
  const std::string experiment = "--experiment=" + file;
  const char* argv[] = {"ablate", "--data", "d", "--out", "o", experiment.c_str()};
  ExperimentArgs args = parse_experiment_args(ablate_flag_set(), 6, argv);
  try {
    variant_config(args.flags, &args.spec.variants[0]);
    ADD_FAILURE() << "an infinite lr was taken";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input()) << e.what();
    EXPECT_NE(e.message().find("scales 1e+300 to inf, out of range"), std::string::npos) << e.message();
  }
}

TEST(ExperimentArgs, MissingPathsAndResumeAreErrors) {
  const char* no_out[] = {"ablate", "--data", "d"};
  EXPECT_THROW(parse_experiment_args(ablate_flag_set(), 3, no_out), Error);
  const char* resume[] = {"ablate", "--data", "d", "--out", "o", "--resume"};
  EXPECT_THROW(parse_experiment_args(ablate_flag_set(), 6, resume), Error);
}

TEST(Ablate, BuiltinVariantsAndSelection) {
  const auto& pool = builtin_ablation_variants().variants;
  std::vector<std::string> names;
  for (const VariantSpec& v : pool) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"no-warmup", "short-warmup", "no-clip", "no-layernorm", "no-residual",
                                              "no-layernorm-no-residual", "lr-x10", "lr-x100"}));
  std::vector<VariantSpec> picked = select_variants(pool, "lr-x100, control,no-clip");
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].name, "no-clip");
  EXPECT_EQ(picked[1].name, "lr-x100");
  EXPECT_EQ(select_variants(pool, "").size(), pool.size());
  EXPECT_TRUE(select_variants(pool, "control").empty());
  EXPECT_THROW(select_variants(pool, "no-such"), Error);

  const char* argv[] = {"ablate", "--data", "d", "--out", "o", "--lr", "0.003", "--warmup-iters", "40"};
  ExperimentArgs args = parse_experiment_args(ablate_flag_set(), 9, argv);
  train::TrainConfig lr100 = variant_config(args.flags, &pool[7]);
  EXPECT_NEAR(lr100.optim.lr, 0.3, 1e-15);
  EXPECT_NEAR(lr100.optim.min_lr, 100 * train::TrainConfig{}.optim.min_lr, 1e-15);
  EXPECT_EQ(variant_config(args.flags, &pool[1]).schedule.warmup_iters, 4);
  train::TrainConfig both = variant_config(args.flags, &pool[5]);
  EXPECT_TRUE(both.model.no_layernorm && both.model.no_residual);
}

TEST(Sweep, LadderSizes) {
  std::vector<VariantSpec> sizes = ladder_variants("2x64,4x128", 64);
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[1].name, "4x128");
  const char* argv[] = {"sweep", "--data", "d", "--out", "o"};
  ExperimentArgs args = parse_experiment_args(sweep_flag_set(), 5, argv);
  train::TrainConfig c = variant_config(args.flags, &sizes[1]);
  EXPECT_EQ(c.model.n_layer, 4);
  EXPECT_EQ(c.model.n_embd, 128);
  EXPECT_EQ(c.model.n_head, 2);
  for (const char* bad : {"4", "4x", "x64", "4x64x2", "0x64", "4xabc", "2x64,2x64"})
    EXPECT_THROW(ladder_variants(bad, 64), Error) << bad;
  EXPECT_THROW(ladder_variants("2x96", 64), Error) << "96 is not a multiple of 64";
}

}  // namespace
}  // namespace nd::experiments
