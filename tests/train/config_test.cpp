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
  EXPECT_EQ(c.model.n_layer, 6);
  EXPECT_EQ(c.model.n_head, 6);
  EXPECT_EQ(c.model.n_embd, 384);
  EXPECT_EQ(c.model.block_size, 256);
  EXPECT_EQ(c.data.batch_size, 64);
  EXPECT_EQ(c.data.grad_accum, 1);
  EXPECT_EQ(c.schedule.max_iters, 5000);
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.optim.min_lr, 1e-4);
  EXPECT_EQ(c.schedule.warmup_iters, 100);
  EXPECT_DOUBLE_EQ(c.optim.beta2, 0.99);
  EXPECT_DOUBLE_EQ(c.optim.grad_clip, 1.0);
  EXPECT_EQ(c.schedule.eval_interval, 250);
  EXPECT_EQ(c.schedule.eval_iters, 20);
  EXPECT_TRUE(c.model.bias);
  EXPECT_FALSE(c.model.no_layernorm);
  EXPECT_FALSE(c.checkpoint.resume);
  EXPECT_EQ(c.checkpoint.keep, 3);
  EXPECT_EQ(c.debug.seed, 1337u);
}

TEST(TrainConfig, CommandLineSetsEveryKind) {
  TrainConfig c = parse({"--n-layer", "3", "--lr", "3e-4", "--device", "cpu", "--data", "d", "--out=o", "--seed", "7"});
  EXPECT_EQ(c.model.n_layer, 3);
  EXPECT_DOUBLE_EQ(c.optim.lr, 3e-4);
  EXPECT_EQ(c.data.dir, "d");
  EXPECT_EQ(c.checkpoint.out_dir, "o");
  EXPECT_EQ(c.debug.seed, 7u);
}

TEST(TrainConfig, BooleansTakeTheBareSwitchAndWords) {
  EXPECT_TRUE(parse({"--resume"}).checkpoint.resume);
  EXPECT_TRUE(parse({"--no-layernorm", "--n-layer", "2"}).model.no_layernorm);
  EXPECT_FALSE(parse({"--bias", "false"}).model.bias);
  EXPECT_FALSE(parse({"--bias=false"}).model.bias);
  EXPECT_TRUE(parse({"--bias", "true"}).model.bias);
  TrainConfig c = parse({"--resume", "--n-layer", "2"});
  EXPECT_TRUE(c.checkpoint.resume);
  EXPECT_EQ(c.model.n_layer, 2);
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
  EXPECT_EQ(c.model.n_layer, 4);
  EXPECT_EQ(c.model.n_head, 2);
  EXPECT_DOUBLE_EQ(c.model.dropout, 0.2);
  EXPECT_FALSE(c.model.bias);
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-2);  // the command line wins
  // The order on the command line does not matter: the file only supplies defaults.
  EXPECT_DOUBLE_EQ(parse({"--lr", "1e-2", "--config", dir / "x.conf"}).optim.lr, 1e-2);
}

// --allreduce is the old name of --collectives: on the command line, in a config file, and in --help.
TEST(TrainConfig, AllreduceIsAnAliasOfCollectives) {
  EXPECT_EQ(parse({}).parallel.collectives, dist::Algorithm::Native);
  EXPECT_EQ(parse({"--collectives", "ring"}).parallel.collectives, dist::Algorithm::Ring);
  EXPECT_EQ(parse({"--allreduce", "ring"}).parallel.collectives, dist::Algorithm::Ring);
  EXPECT_EQ(parse({"--allreduce=auto"}).parallel.collectives, dist::Algorithm::Auto);
  EXPECT_EQ(parse({"--pp", "1", "--tp", "2"}).parallel.pp, 1);
  TempDir dir;
  write(dir / "old.conf", "allreduce = ring\n");
  EXPECT_EQ(parse({"--config", dir / "old.conf"}).parallel.collectives, dist::Algorithm::Ring);
  EXPECT_EQ(parse({"--config", dir / "old.conf", "--collectives", "native"}).parallel.collectives,
            dist::Algorithm::Native);
  EXPECT_NE(train_flag_set().help().find("--allreduce TEXT"), std::string::npos);
  EXPECT_NE(train_flag_set().help().find("alias of --collectives"), std::string::npos);
}

// The choices are parsed when the flag is read, into the type the code uses, with the flag's own
// error line; the text they give back reads back as the same value (checkpoints and run.conf
// record it), and every default's text is a fixed point.
TEST(TrainConfig, ChoicesAreParsedWhenReadAndWrittenBackAsRead) {
  TrainConfig c = parse({"--device", "cuda", "--dtype", "fp16", "--grad-dtype", "f32", "--loss-scale", "1024",
                         "--fp8-layers", "mlp,attn", "--pp-schedule", "zb", "--collectives", "peer", "--attention",
                         "cudnn", "--recompute", "block", "--async-save", "false"});
  EXPECT_EQ(c.parallel.device, Device::cuda(0));
  EXPECT_EQ(c.precision.dtype, DType::F16);
  EXPECT_EQ(c.precision.grad_dtype, DType::F32);
  ASSERT_TRUE(c.precision.loss_scale.has_value());
  EXPECT_FALSE(c.precision.loss_scale->dynamic);
  EXPECT_EQ(c.precision.loss_scale->initial_scale, 1024.0);
  EXPECT_EQ(c.precision.fp8_layers, (Fp8Layers{true, true, false}));
  EXPECT_EQ(c.parallel.pp_schedule, PipelineKind::ZeroBubble);
  EXPECT_EQ(c.parallel.collectives, dist::Algorithm::Peer);
  EXPECT_EQ(c.model.attention, AttentionBackend::Cudnn);
  EXPECT_EQ(c.model.recompute, nn::Recompute::Block);
  EXPECT_EQ(c.checkpoint.async_save, AsyncSave::Off);
  EXPECT_FALSE(parse({}).precision.grad_dtype.has_value());
  EXPECT_FALSE(parse({"--loss-scale", "auto"}).precision.loss_scale.has_value());
  EXPECT_TRUE(parse({"--loss-scale", "dynamic"}).precision.loss_scale->dynamic);

  std::map<std::string, std::string> text;
  for (const ConfigField& f : train_config_fields(c)) text[f.name] = f.text;
  EXPECT_EQ(text["device"], "cuda:0");
  EXPECT_EQ(text["dtype"], "fp16");
  EXPECT_EQ(text["grad-dtype"], "f32");
  EXPECT_EQ(text["loss-scale"], "1024");
  EXPECT_EQ(text["fp8-layers"], "attn,mlp");
  EXPECT_EQ(text["pp-schedule"], "zb");
  EXPECT_EQ(text["collectives"], "peer");
  EXPECT_EQ(text["attention"], "cudnn");
  EXPECT_EQ(text["recompute"], "block");
  EXPECT_EQ(text["async-save"], "false");
  for (const TrainConfig& config : {c, TrainConfig{}}) {
    for (const ConfigField& f : train_config_fields(config)) {
      TrainConfig again;
      set_train_config_field(again, f.name, f.text, f.name);
      for (const ConfigField& g : train_config_fields(again))
        if (g.name == f.name) EXPECT_EQ(g.text, f.text) << f.name;
    }
  }

  EXPECT_NE(error_of({"--device", "gpu"}).find("bad device 'gpu'"), std::string::npos);
  EXPECT_NE(error_of({"--dtype", "f8"}).find("unknown dtype 'f8'"), std::string::npos);
  EXPECT_NE(error_of({"--loss-scale", "-1"}).find("--loss-scale must be 'dynamic' or a positive number"),
            std::string::npos);
  EXPECT_NE(error_of({"--fp8-layers", "attn,ffn"}).find("--fp8-layers takes all or a comma list"), std::string::npos);
  EXPECT_NE(error_of({"--recompute", "all"}).find("--recompute must be none, attention or block, got 'all'"),
            std::string::npos);
  EXPECT_NE(error_of({"--async-save", "yes"}).find("--async-save must be true, false or auto, got 'yes'"),
            std::string::npos);
  EXPECT_NE(error_of({"--allreduce", "tree"}).find("--collectives (or --allreduce) must be native"), std::string::npos);
}

TEST(TrainConfig, ShippedShakespeareCharConfigParses) {
  TrainConfig c = parse({"--config", std::string(ND_SOURCE_DIR) + "/configs/shakespeare_char.conf"});
  EXPECT_EQ(c.model.n_layer, 6);
  EXPECT_EQ(c.model.n_head, 6);
  EXPECT_EQ(c.model.n_embd, 384);
  EXPECT_EQ(c.model.block_size, 256);
  EXPECT_EQ(c.data.batch_size, 64);
  EXPECT_DOUBLE_EQ(c.model.dropout, 0.2);
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.optim.min_lr, 1e-4);
  EXPECT_EQ(c.schedule.warmup_iters, 100);
  EXPECT_EQ(c.schedule.max_iters, 5000);
  EXPECT_EQ(c.schedule.lr_decay_iters, 5000);
  EXPECT_DOUBLE_EQ(c.optim.beta2, 0.99);
  EXPECT_EQ(c.schedule.eval_interval, 250);
  EXPECT_EQ(c.schedule.eval_iters, 200);
  EXPECT_EQ(c.observe.log_interval, 10);
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
    EXPECT_NO_THROW(validate_train_config(c, c.parallel.tp));
    auto named = gpt2_millions.find(file.stem().string());
    if (named == gpt2_millions.end()) continue;
    ++gpt2_seen;
    const double C = c.model.n_embd, L = c.model.n_layer;
    const double params = 50257 * C + c.model.block_size * C + L * (12 * C * C + 13 * C) + 2 * C;
    EXPECT_NEAR(params / 1e6, named->second, 0.03 * named->second)
        << "n-layer " << c.model.n_layer << " n-embd " << c.model.n_embd;
    EXPECT_EQ(c.model.n_embd / c.model.n_head, 64) << "GPT-2 heads are 64 wide";
    EXPECT_EQ(c.model.block_size, 1024);
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
  c.parallel.tp = 2147483647;
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
  c.model.n_embd = 30;
  c.model.n_head = 4;
  std::string e = error_of_config(c, 1);
  EXPECT_NE(e.find("--n-embd 30 is not divisible by --n-head 4"), std::string::npos) << e;

  // --grad-accum counts each rank's micro-steps, so any world size fits it.
  c = ok;
  c.data.grad_accum = 4;
  EXPECT_EQ(error_of_config(c, 2), "");
  EXPECT_EQ(error_of_config(c, 3), "");

  // --pp: the stages must split the blocks (evenly, or as --pp-layers lists them), the schedule
  // must be one the runtime runs.
  c = ok;
  c.model.n_layer = 4;
  c.parallel.pp = 3;
  EXPECT_NE(error_of_config(c, 3).find("--pp 3 does not divide --n-layer 4"), std::string::npos)
      << error_of_config(c, 3);
  c.parallel.pp_layers = "2,1,1";
  EXPECT_EQ(error_of_config(c, 3), "");
  c.parallel.pp_layers = "2,1";
  EXPECT_NE(error_of_config(c, 3).find("lists 2 stages of 3 blocks"), std::string::npos) << error_of_config(c, 3);
  c.parallel.pp_layers = "2,x,1";
  EXPECT_NE(error_of_config(c, 3).find("'x' is not a block count"), std::string::npos) << error_of_config(c, 3);
  c = ok;
  c.model.n_layer = 4;
  c.parallel.pp = 2;
  EXPECT_EQ(error_of_config(c, 2), "");
  EXPECT_NE(error_of({"--pp-schedule", "nosuch"}).find("--pp-schedule must be gpipe, 1f1b, interleaved or zb"),
            std::string::npos);
  c.parallel.pp_schedule = PipelineKind::ZeroBubble;
  EXPECT_EQ(error_of_config(c, 2), "");
  c.parallel.pp_schedule = PipelineKind::Interleaved;
  c.parallel.pp_virtual = 2;
  c.data.grad_accum = 2;
  EXPECT_NE(error_of_config(c, 2).find("must be a multiple of --pp 2 above it"), std::string::npos)
      << error_of_config(c, 2);
  c.data.grad_accum = 4;
  EXPECT_EQ(error_of_config(c, 2), "");  // 4 stages of one block, two per rank
  c.parallel.pp_schedule = PipelineKind::GPipe;
  EXPECT_NE(error_of_config(c, 2).find("--pp-virtual 2 needs --pp-schedule interleaved"), std::string::npos);
  c.parallel.pp = 0;
  EXPECT_NE(error_of_config(c, 1).find("--pp must be >= 1"), std::string::npos);
  EXPECT_EQ(ok.parallel.dp_size(4), 4);

  // --zero: 0 to 3; what stage 3 does not support yet is refused with a line that says so. Every
  // stage composes with the pipeline, sequence parallelism and per-layer statistics.
  c = ok;
  c.parallel.zero = 2;
  EXPECT_EQ(error_of_config(c, 2), "");
  c.parallel.zero = 3;
  EXPECT_EQ(error_of_config(c, 2), "");
  c.parallel.zero = 4;
  EXPECT_NE(error_of_config(c, 2).find("--zero must be 0, 1, 2 or 3, got 4"), std::string::npos);
  c.parallel.zero = 3;
  c.checkpoint.init_from = "gpt2";  // loaded into the shards (zero3_init_from_mpi_test)
  EXPECT_EQ(error_of_config(c, 2), "");
  c.checkpoint.init_from = "";
  for (int zero : {1, 2, 3}) {
    c = ok;
    c.parallel.zero = zero;
    c.observe.layer_stats = 5;
    EXPECT_EQ(error_of_config(c, 2), "") << "--zero " << zero << " --layer-stats 5";
    c.observe.layer_stats = 0;
    c.parallel.tp = 2;
    c.parallel.sequence_parallel = true;
    EXPECT_EQ(error_of_config(c, 4), "") << "--zero " << zero << " --tp 2 --sequence-parallel";
    c.parallel.tp = 1;
    c.parallel.sequence_parallel = false;
    c.parallel.pp = 2;
    EXPECT_EQ(error_of_config(c, 4), "") << "--zero " << zero << " --pp 2";
  }

  // --fp8 at any tp and ZeRO stage: what it checks is that every rank's shard of the features is a
  // multiple of 16 (before the GPU is looked for, so the line is the same on every machine).
  c = ok;
  c.parallel.device = Device::cuda();
  c.precision.dtype = DType::BF16;
  c.precision.fp8 = true;
  c.model.n_embd = 32;
  c.parallel.tp = 2;
  c.parallel.zero = 3;
  EXPECT_EQ(error_of_config(c, 4).find("--fp8"), std::string::npos) << error_of_config(c, 4);
  EXPECT_EQ(error_of_config(c, 4).find("--zero 3"), std::string::npos) << error_of_config(c, 4);
  c.model.n_embd = 48;  // 24 a rank
  EXPECT_NE(error_of_config(c, 4).find("n-embd of 16 x --tp (FP8 GEMM alignment), got 4 x 16 and 48 at --tp 2"),
            std::string::npos)
      << error_of_config(c, 4);

  c = ok;
  c.parallel.tp = 2;
  EXPECT_NE(error_of_config(c, 3).find("not divisible by --tp 2"), std::string::npos);
  EXPECT_EQ(error_of_config(c, 2), "");
  EXPECT_EQ(error_of_config(c, 4), "");
  c.parallel.tp = 3;
  c.model.n_head = 3;
  c.model.n_embd = 48;
  EXPECT_EQ(error_of_config(c, 3), "");
  c.model.n_embd = 40;
  c.model.n_head = 4;
  EXPECT_NE(error_of_config(c, 3).find("--n-head 4 is not divisible by --tp 3"), std::string::npos);

  // Sequence parallelism splits each sequence: tp must divide --block-size (16), not the batch. At
  // tp 1 it changes nothing (so one flag set serves a ladder of tp sizes).
  c = ok;
  c.parallel.sequence_parallel = true;
  EXPECT_EQ(error_of_config(c, 1), "");
  c.parallel.tp = 3;
  c.model.n_head = 3;
  c.model.n_embd = 48;
  c.data.batch_size = 1;
  EXPECT_NE(error_of_config(c, 3).find("--sequence-parallel: --block-size 16 is not divisible by --tp 3"),
            std::string::npos);
  c.model.block_size = 15;
  EXPECT_EQ(error_of_config(c, 3), "");

  c = ok;
  c.data.dir = "";
  EXPECT_NE(error_of_config(c, 1).find("--data"), std::string::npos);
  c = ok;
  c.model.dropout = 1.0;
  EXPECT_NE(error_of_config(c, 1).find("--dropout"), std::string::npos);
  c = ok;
  c.precision.dtype = DType::BF16;
  EXPECT_NE(error_of_config(c, 1).find("bf16"), std::string::npos);
  EXPECT_NE(error_of({"--collectives", "tree"}).find("--collectives"), std::string::npos);
  c = ok;
  c.parallel.collectives = dist::Algorithm::Auto;
  EXPECT_EQ(error_of_config(c, 1), "");
}

// --attention: auto by default; auto falls back to ours where cuDNN's cannot run (the CPU, f32,
// head sizes it does not take) and for dropout under tp (cuDNN's masks are not the tp = 1 ones);
// cudnn there is an input error that says why.
TEST(TrainConfig, AttentionKernelChoice) {
  TrainConfig c = testing::tiny_config("d", "o");
  EXPECT_EQ(c.model.attention, AttentionBackend::Auto);
  EXPECT_EQ(attention_kernel_for(c), ops::AttentionKernel::Ours);  // tiny_config trains on the CPU
  EXPECT_EQ(model_config_for(c, 65).attention, ops::AttentionKernel::Ours);
  c.model.attention = AttentionBackend::Ours;
  EXPECT_EQ(attention_kernel_for(c), ops::AttentionKernel::Ours);
  c.model.attention = AttentionBackend::Auto;
  // Decided before cuDNN is asked for: the same on every machine.
  TrainConfig gpu = c;
  gpu.parallel.device = Device::cuda();
  gpu.precision.dtype = DType::BF16;
  {
    TrainConfig tp_dropout = gpu;
    tp_dropout.parallel.tp = 2;
    tp_dropout.model.dropout = 0.1;
    EXPECT_EQ(attention_kernel_for(tp_dropout), ops::AttentionKernel::Ours);
  }
  for (int n_embd : {36, 272}) {  // head sizes 12 (not a multiple of 8) and 136 (above 128)
    TrainConfig odd_heads = gpu;
    odd_heads.model.n_head = n_embd == 36 ? 3 : 2;
    odd_heads.model.n_embd = n_embd;
    EXPECT_EQ(attention_kernel_for(odd_heads), ops::AttentionKernel::Ours) << n_embd;
    odd_heads.model.attention = AttentionBackend::Cudnn;
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
  c.model.attention = AttentionBackend::Cudnn;
  EXPECT_NE(error_of_kernel(c).find("--attention cudnn: cuDNN attention runs on the GPU, and --device is cpu"),
            std::string::npos)
      << error_of_kernel(c);
  EXPECT_NE(error_of({"--attention", "flash"}).find("--attention must be ours, cudnn or auto, got 'flash'"),
            std::string::npos);
  if (!cuda_available()) {
    // A GPU run asked for where there is none (or no cuDNN in the build): the reason, not a crash.
    c.model.attention = AttentionBackend::Cudnn;
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    EXPECT_NE(error_of_kernel(c).find("--attention cudnn: "), std::string::npos) << error_of_kernel(c);
    std::string why;
    EXPECT_FALSE(cudnn::attention_available(&why));
    EXPECT_FALSE(why.empty());
  }
}

}  // namespace
}  // namespace nd::train
