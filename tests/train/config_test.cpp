// Train flags (cli/train_flags.h over train/config.h): defaults, command line, config files
// (defaults that flags override), boolean forms, errors that name the key and the file:line, and
// the cross-flag validation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "cli/train_flags.h"
#include "tensor/error.h"
#include "kernels/cudnn/attention_cudnn.h"
#include "tensor/device.h"
#include "train/config.h"
#include "train/model_config.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using cli::parse_train_args;
using cli::train_flag_set;
using testing::TempDir;

TrainConfig parse(std::vector<std::string> args) {
  args.insert(args.begin(), "train");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_train_args(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(TrainConfig, DefaultsMatchTheCliContract) {
  TrainConfig c = parse({});
  EXPECT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.n_head, 6);
  EXPECT_EQ(c.n_embd, 384);
  EXPECT_EQ(c.block_size, 256);
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_EQ(c.grad_accum, 1);
  EXPECT_EQ(c.max_iters, 5000);
  EXPECT_DOUBLE_EQ(c.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.min_lr, 1e-4);
  EXPECT_EQ(c.warmup_iters, 100);
  EXPECT_DOUBLE_EQ(c.beta2, 0.99);
  EXPECT_DOUBLE_EQ(c.grad_clip, 1.0);
  EXPECT_EQ(c.eval_interval, 250);
  EXPECT_EQ(c.eval_iters, 20);
  EXPECT_TRUE(c.bias);
  EXPECT_FALSE(c.no_layernorm);
  EXPECT_FALSE(c.resume);
  EXPECT_EQ(c.keep, 3);
  EXPECT_EQ(c.seed, 1337u);
}

TEST(TrainConfig, CommandLineSetsEveryKind) {
  TrainConfig c = parse({"--n-layer", "3", "--lr", "3e-4", "--device", "cpu", "--data", "d", "--out=o", "--seed", "7"});
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_DOUBLE_EQ(c.lr, 3e-4);
  EXPECT_EQ(c.data_dir, "d");
  EXPECT_EQ(c.out_dir, "o");
  EXPECT_EQ(c.seed, 7u);
}

TEST(TrainConfig, BooleansTakeTheBareSwitchAndWords) {
  EXPECT_TRUE(parse({"--resume"}).resume);
  EXPECT_TRUE(parse({"--no-layernorm", "--n-layer", "2"}).no_layernorm);
  EXPECT_FALSE(parse({"--bias", "false"}).bias);
  EXPECT_FALSE(parse({"--bias=false"}).bias);
  EXPECT_TRUE(parse({"--bias", "true"}).bias);
  TrainConfig c = parse({"--resume", "--n-layer", "2"});
  EXPECT_TRUE(c.resume);
  EXPECT_EQ(c.n_layer, 2);
}

TEST(TrainConfig, FileSetsDefaultsAndFlagsOverride) {
  TempDir dir;
  write(dir / "x.conf",
        "# a comment\n"
        "n-layer = 4   # trailing comment\n"
        "n_head = 2\n"
        "\n"
        "lr = 6e-4\n"
        "dropout = 0.2\n"
        "bias = false\n");
  TrainConfig c = parse({"--config", dir / "x.conf", "--lr", "1e-2"});
  EXPECT_EQ(c.n_layer, 4);
  EXPECT_EQ(c.n_head, 2);
  EXPECT_DOUBLE_EQ(c.dropout, 0.2);
  EXPECT_FALSE(c.bias);
  EXPECT_DOUBLE_EQ(c.lr, 1e-2);  // the command line wins
  // The order on the command line does not matter: the file only supplies defaults.
  EXPECT_DOUBLE_EQ(parse({"--lr", "1e-2", "--config", dir / "x.conf"}).lr, 1e-2);
}

// --allreduce is the old name of --collectives: on the command line, in a config file, and in --help.
TEST(TrainConfig, AllreduceIsAnAliasOfCollectives) {
  EXPECT_EQ(parse({}).collectives, "native");
  EXPECT_EQ(parse({"--collectives", "ring"}).collectives, "ring");
  EXPECT_EQ(parse({"--allreduce", "ring"}).collectives, "ring");
  EXPECT_EQ(parse({"--allreduce=auto"}).collectives, "auto");
  EXPECT_EQ(parse({"--pp", "1", "--tp", "2"}).pp, 1);
  TempDir dir;
  write(dir / "old.conf", "allreduce = ring\n");
  EXPECT_EQ(parse({"--config", dir / "old.conf"}).collectives, "ring");
  EXPECT_EQ(parse({"--config", dir / "old.conf", "--collectives", "native"}).collectives, "native");
  EXPECT_NE(train_flag_set().help().find("--allreduce TEXT"), std::string::npos);
  EXPECT_NE(train_flag_set().help().find("alias of --collectives"), std::string::npos);
}

TEST(TrainConfig, ShippedShakespeareCharConfigParses) {
  TrainConfig c = parse({"--config", std::string(ND_SOURCE_DIR) + "/configs/shakespeare_char.conf"});
  EXPECT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.n_head, 6);
  EXPECT_EQ(c.n_embd, 384);
  EXPECT_EQ(c.block_size, 256);
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_DOUBLE_EQ(c.dropout, 0.2);
  EXPECT_DOUBLE_EQ(c.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.min_lr, 1e-4);
  EXPECT_EQ(c.warmup_iters, 100);
  EXPECT_EQ(c.max_iters, 5000);
  EXPECT_EQ(c.lr_decay_iters, 5000);
  EXPECT_DOUBLE_EQ(c.beta2, 0.99);
  EXPECT_EQ(c.eval_interval, 250);
  EXPECT_EQ(c.eval_iters, 200);
  EXPECT_EQ(c.log_interval, 10);
}

// Every shipped config (configs/*.conf) parses and passes validation (on the CPU here, so the
// GPU configs run with --device cpu --dtype f32), and the GPT-2 ones hold the parameter count
// their name promises: V C + T C + L (12 C^2 + 13 C) + 2 C with GPT-2's 50257-token vocabulary.
TEST(TrainConfig, EveryShippedConfigParsesAndValidates) {
  const std::filesystem::path dir = std::filesystem::path(ND_SOURCE_DIR) / "configs";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".conf") files.push_back(entry.path());
  ASSERT_GE(files.size(), 5u);
  const std::map<std::string, double> gpt2_millions = {
      {"gpt2_124m", 124}, {"gpt2_350m", 350}, {"gpt2_774m", 774}, {"gpt2_1558m", 1558}};
  int gpt2_seen = 0;
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    TrainConfig c = parse({"--config", file.string(), "--data", "d", "--out", "o", "--device", "cpu", "--dtype", "f32"});
    EXPECT_NO_THROW(validate_train_config(c, c.tp));
    auto named = gpt2_millions.find(file.stem().string());
    if (named == gpt2_millions.end()) continue;
    ++gpt2_seen;
    const double C = c.n_embd, L = c.n_layer;
    const double params = 50257 * C + c.block_size * C + L * (12 * C * C + 13 * C) + 2 * C;
    EXPECT_NEAR(params / 1e6, named->second, 0.03 * named->second) << "n-layer " << c.n_layer << " n-embd " << c.n_embd;
    EXPECT_EQ(c.n_embd / c.n_head, 64) << "GPT-2 heads are 64 wide";
    EXPECT_EQ(c.block_size, 1024);
  }
  EXPECT_EQ(gpt2_seen, 4);
}

TEST(TrainConfig, UnknownKeyNamesKeyAndLine) {
  TempDir dir;
  write(dir / "bad.conf", "n-layer = 4\nlearning-rate = 1e-3\n");
  std::string e = error_of({"--config", dir / "bad.conf"});
  EXPECT_NE(e.find("unknown key 'learning-rate'"), std::string::npos) << e;
  EXPECT_NE(e.find("bad.conf:2"), std::string::npos) << e;
}

TEST(TrainConfig, BadValuesNameTheKey) {
  TempDir dir;
  write(dir / "bad.conf", "n-layer = four\n");
  std::string e = error_of({"--config", dir / "bad.conf"});
  EXPECT_NE(e.find("'four'"), std::string::npos) << e;
  EXPECT_NE(e.find("n-layer"), std::string::npos) << e;
  EXPECT_NE(e.find("bad.conf:1"), std::string::npos) << e;

  e = error_of({"--lr", "fast"});
  EXPECT_NE(e.find("'lr'"), std::string::npos) << e;
  EXPECT_NE(e.find("command line"), std::string::npos) << e;
  EXPECT_NE(error_of({"--bias", "maybe"}).find("bias"), std::string::npos);
  EXPECT_NE(error_of({"--n-layer", "2.5"}).find("n-layer"), std::string::npos);
  write(dir / "noeq.conf", "n-layer 4\n");
  EXPECT_NE(error_of({"--config", dir / "noeq.conf"}).find("noeq.conf:1"), std::string::npos);
  EXPECT_NE(error_of({"--config", dir / "missing.conf"}).find("missing.conf"), std::string::npos);
}

TEST(TrainConfig, UnknownFlagsAndStrayArgumentsFail) {
  EXPECT_NE(error_of({"--n-layers", "2"}).find("n-layers"), std::string::npos);
  EXPECT_NE(error_of({"stray"}).find("stray"), std::string::npos);
}

TEST(TrainConfig, HelpListsEveryFlagWithItsDefault) {
  std::string help = train_flag_set().help();
  for (const ConfigField& f : train_config_fields(TrainConfig{})) {
    EXPECT_NE(help.find("--" + f.name + " "), std::string::npos) << f.name;
    if (!f.text.empty()) {
      EXPECT_NE(help.find("(default: " + f.text + ")"), std::string::npos) << f.name;
    }
  }
  EXPECT_NE(help.find("(default: 0.001)"), std::string::npos) << help;  // --lr reads as written
  bool requested = false;
  std::vector<const char*> argv = {"train", "--help"};
  parse_train_args(2, argv.data(), &requested);
  EXPECT_TRUE(requested);
}

TEST(TrainConfig, ATensorParallelSizeThatOverflowsThePaddedVocabularyIsAnInputError) {
  // tp = 2^31 - 1: 128 x tp overflowed an int (undefined behaviour, a negative padded vocabulary).
  TrainConfig c = testing::tiny_config("d", "o");
  c.tp = 2147483647;
  try {
    validate_train_config(c, 1);
    ADD_FAILURE() << "tp 2^31 - 1 was taken";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input()) << e.what();
    EXPECT_NE(e.message().find("padded to a multiple of 128 x tp 2147483647 has more than 2^31 rows"),
              std::string::npos)
        << e.message();
  }
}

TEST(TrainConfig, ValidationNamesTheFlags) {
  auto error_of_config = [](const TrainConfig& c, int world) -> std::string {
    try {
      validate_train_config(c, world);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  TrainConfig ok = testing::tiny_config("d", "o");
  EXPECT_EQ(error_of_config(ok, 1), "");

  TrainConfig c = ok;
  c.n_embd = 30;
  c.n_head = 4;
  std::string e = error_of_config(c, 1);
  EXPECT_NE(e.find("--n-embd 30 is not divisible by --n-head 4"), std::string::npos) << e;

  // --grad-accum counts each rank's micro-steps, so any world size fits it.
  c = ok;
  c.grad_accum = 4;
  EXPECT_EQ(error_of_config(c, 2), "");
  EXPECT_EQ(error_of_config(c, 3), "");

  // --pp: the stages must split the blocks (evenly, or as --pp-layers lists them), the schedule
  // must be one the runtime runs.
  c = ok;
  c.n_layer = 4;
  c.pp = 3;
  EXPECT_NE(error_of_config(c, 3).find("--pp 3 does not divide --n-layer 4"), std::string::npos)
      << error_of_config(c, 3);
  c.pp_layers = "2,1,1";
  EXPECT_EQ(error_of_config(c, 3), "");
  c.pp_layers = "2,1";
  EXPECT_NE(error_of_config(c, 3).find("lists 2 stages of 3 blocks"), std::string::npos) << error_of_config(c, 3);
  c.pp_layers = "2,x,1";
  EXPECT_NE(error_of_config(c, 3).find("'x' is not a block count"), std::string::npos) << error_of_config(c, 3);
  c = ok;
  c.n_layer = 4;
  c.pp = 2;
  EXPECT_EQ(error_of_config(c, 2), "");
  c.pp_schedule = "nosuch";
  EXPECT_NE(error_of_config(c, 2).find("--pp-schedule must be gpipe, 1f1b, interleaved or zb"), std::string::npos);
  c.pp_schedule = "zb";
  EXPECT_EQ(error_of_config(c, 2), "");
  c.pp_schedule = "interleaved";
  c.pp_virtual = 2;
  c.grad_accum = 2;
  EXPECT_NE(error_of_config(c, 2).find("must be a multiple of --pp 2 above it"), std::string::npos)
      << error_of_config(c, 2);
  c.grad_accum = 4;
  EXPECT_EQ(error_of_config(c, 2), "");  // 4 stages of one block, two per rank
  c.pp_schedule = "gpipe";
  EXPECT_NE(error_of_config(c, 2).find("--pp-virtual 2 needs --pp-schedule interleaved"), std::string::npos);
  c.pp = 0;
  EXPECT_NE(error_of_config(c, 1).find("--pp must be >= 1"), std::string::npos);
  EXPECT_EQ(ok.dp_size(4), 4);

  // --zero: 0 to 3; what stages 2 and 3 do not support yet is refused with a line that says so, as
  // is sequence parallelism.
  c = ok;
  c.zero = 2;
  EXPECT_EQ(error_of_config(c, 2), "");
  c.zero = 3;
  EXPECT_EQ(error_of_config(c, 2), "");
  c.zero = 4;
  EXPECT_NE(error_of_config(c, 2).find("--zero must be 0, 1, 2 or 3, got 4"), std::string::npos);
  c.zero = 2;
  c.layer_stats = 5;
  EXPECT_NE(error_of_config(c, 2).find("--zero 2 with --layer-stats is not available yet"), std::string::npos);
  c.layer_stats = 0;
  c.zero = 3;
  c.init_from = "gpt2";
  EXPECT_NE(error_of_config(c, 2).find("--zero 3 with --init-from is not available yet"), std::string::npos);
  c.init_from = "";
  c.zero = 1;
  c.tp = 2;
  c.sequence_parallel = true;
  EXPECT_NE(error_of_config(c, 4).find("--zero 1 with --sequence-parallel is not available yet"), std::string::npos);

  c = ok;
  c.tp = 2;
  EXPECT_NE(error_of_config(c, 3).find("not divisible by --tp 2"), std::string::npos);
  EXPECT_EQ(error_of_config(c, 2), "");
  EXPECT_EQ(error_of_config(c, 4), "");
  c.tp = 3;
  c.n_head = 3;
  c.n_embd = 48;
  EXPECT_EQ(error_of_config(c, 3), "");
  c.n_embd = 40;
  c.n_head = 4;
  EXPECT_NE(error_of_config(c, 3).find("--n-head 4 is not divisible by --tp 3"), std::string::npos);

  // Sequence parallelism splits each sequence: tp must divide --block-size (16), not the batch. At
  // tp 1 it changes nothing (so one flag set serves a ladder of tp sizes).
  c = ok;
  c.sequence_parallel = true;
  EXPECT_EQ(error_of_config(c, 1), "");
  c.tp = 3;
  c.n_head = 3;
  c.n_embd = 48;
  c.batch_size = 1;
  EXPECT_NE(error_of_config(c, 3).find("--sequence-parallel: --block-size 16 is not divisible by --tp 3"),
            std::string::npos);
  c.block_size = 15;
  EXPECT_EQ(error_of_config(c, 3), "");

  c = ok;
  c.data_dir = "";
  EXPECT_NE(error_of_config(c, 1).find("--data"), std::string::npos);
  c = ok;
  c.dropout = 1.0;
  EXPECT_NE(error_of_config(c, 1).find("--dropout"), std::string::npos);
  c = ok;
  c.dtype = "bf16";
  EXPECT_NE(error_of_config(c, 1).find("bf16"), std::string::npos);
  c = ok;
  c.collectives = "tree";
  EXPECT_NE(error_of_config(c, 1).find("--collectives"), std::string::npos);
  c.collectives = "auto";
  EXPECT_EQ(error_of_config(c, 1), "");
}

// --attention: auto by default; auto falls back to ours where cuDNN's cannot run (the CPU, f32,
// head sizes it does not take) and for dropout under tp (cuDNN's masks are not the tp = 1 ones);
// cudnn there is an input error that says why.
TEST(TrainConfig, AttentionKernelChoice) {
  TrainConfig c = testing::tiny_config("d", "o");
  EXPECT_EQ(c.attention, "auto");
  EXPECT_EQ(attention_kernel_for(c), ops::AttentionKernel::Ours);  // tiny_config trains on the CPU
  EXPECT_EQ(model_config_for(c, 65).attention, ops::AttentionKernel::Ours);
  c.attention = "ours";
  EXPECT_EQ(attention_kernel_for(c), ops::AttentionKernel::Ours);
  c.attention = "auto";
  // Decided before cuDNN is asked for: the same on every machine.
  TrainConfig gpu = c;
  gpu.device = "cuda";
  gpu.dtype = "bf16";
  {
    TrainConfig tp_dropout = gpu;
    tp_dropout.tp = 2;
    tp_dropout.dropout = 0.1;
    EXPECT_EQ(attention_kernel_for(tp_dropout), ops::AttentionKernel::Ours);
  }
  for (int n_embd : {36, 272}) {  // head sizes 12 (not a multiple of 8) and 136 (above 128)
    TrainConfig odd_heads = gpu;
    odd_heads.n_head = n_embd == 36 ? 3 : 2;
    odd_heads.n_embd = n_embd;
    EXPECT_EQ(attention_kernel_for(odd_heads), ops::AttentionKernel::Ours) << n_embd;
    odd_heads.attention = "cudnn";
    try {
      attention_kernel_for(odd_heads);
      ADD_FAILURE() << "--attention cudnn at n_embd " << n_embd << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--attention cudnn: "), std::string::npos) << e.what();
    }
  }
  auto error_of_kernel = [](const TrainConfig& config) -> std::string {
    try {
      validate_train_config(config, 1);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  c.attention = "cudnn";
  EXPECT_NE(error_of_kernel(c).find("--attention cudnn: cuDNN attention runs on the GPU, and --device is cpu"),
            std::string::npos)
      << error_of_kernel(c);
  c.attention = "flash";
  EXPECT_NE(error_of_kernel(c).find("--attention must be ours, cudnn or auto, got 'flash'"), std::string::npos);
  if (!cuda_available()) {
    // A GPU run asked for where there is none (or no cuDNN in the build): the reason, not a crash.
    c.attention = "cudnn";
    c.device = "cuda";
    c.dtype = "bf16";
    EXPECT_NE(error_of_kernel(c).find("--attention cudnn: "), std::string::npos) << error_of_kernel(c);
    std::string why;
    EXPECT_FALSE(cudnn::attention_available(&why));
    EXPECT_FALSE(why.empty());
  }
}

}  // namespace
}  // namespace nd::train
