// prepare, train and sample: flags in, library calls, lines out.
#include "train/commands.h"

#include <cstdio>
#include <iostream>

#include "data/prepare.h"
#include "dist/fault_guard.h"
#include "dist/world.h"
#include "nn/gpt.h"
#include "train/checkpoint_model.h"
#include "train/config.h"
#include "train/metrics.h"
#include "train/sampler.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

FlagSpec flag(const char* name, const char* default_value, const char* help, FlagType type = FlagType::String,
              bool repeated = false) {
  FlagSpec s;
  s.name = name;
  s.default_value = default_value;
  s.help = help;
  s.type = type;
  s.repeated = repeated;
  return s;
}

FlagSet prepare_flags() {
  FlagSet set("prepare",
              "(--input FILE [--input FILE ...] | --corpus kjv|shakespeare | --random-tokens N --vocab-size V) "
              "--out DIR [flags]");
  set.add(flag("input", "", "text file to tokenize (several are concatenated)", FlagType::String, true))
      .add(flag("corpus", "kjv", "named corpus used when no --input is given: kjv or shakespeare"))
      .add(flag("out", "", "directory for train.bin, val.bin, tokenizer.txt (required)"))
      .add(flag("tokenizer", "char", "char or bpe"))
      .add(flag("vocab-size", "0", "bpe vocabulary size, >= 256 (0 = 2048); with --random-tokens the id vocabulary",
                FlagType::Int))
      .add(flag("val-fraction", "0.1", "share of the tokens that goes to val.bin", FlagType::Float))
      .add(flag("random-tokens", "0",
                "benchmark data: N uniform random ids in train.bin, N/10 in val.bin, an ids tokenizer (0 = off)",
                FlagType::Int))
      .add(flag("seed", "1337", "seed of --random-tokens", FlagType::Int));
  return set;
}

FlagSet sample_flags() {
  FlagSet set("sample", "--ckpt DIR_OR_FILE [--prompt TEXT] [flags]");
  set.add(flag("ckpt", "", "checkpoint file, or a directory (its newest checkpoint) (required)"))
      .add(flag("prompt", "", "text to continue (default: a newline)"))
      .add(flag("tokens", "200", "tokens to generate", FlagType::Int))
      .add(flag("temperature", "0.8", "softmax temperature (0 = greedy)", FlagType::Float))
      .add(flag("top-k", "200", "sample among the k likeliest tokens (0 = all)", FlagType::Int))
      .add(flag("seed", "1337", "sampling seed", FlagType::Int))
      .add(flag("device", "cpu", "cpu or cuda"));
  return set;
}

// Progress of a long prepare as one line per tenth.
ProgressFn tenths_printer() {
  auto last = std::make_shared<int>(-1);
  return [last](double fraction) {
    int tenth = static_cast<int>(fraction * 10.0 + 1e-9);
    if (tenth <= *last) return;
    *last = tenth;
    std::printf("prepare: %3d%%\n", tenth * 10);
    std::fflush(stdout);
  };
}

std::string final_summary_line(const TrainResult& r) {
  char line[256];
  std::snprintf(line, sizeof(line), "done: %lld steps | best val loss %.4f | %.2fM params | %s tokens%s",
                static_cast<long long>(r.steps_done), r.best_val_loss, static_cast<double>(r.params) / 1e6,
                format_rate(static_cast<double>(r.tokens)).c_str(), r.diverged ? " | diverged" : "");
  std::string out = line;
  if (r.peak_device_bytes > 0) {
    std::snprintf(line, sizeof(line), " | peak GPU memory %.2f GiB", static_cast<double>(r.peak_device_bytes) / (1 << 30));
    out += line;
  }
  return out;
}

// Dense peak FLOP/s of the GPU for the dtype the model computes in, for MFU; 0 (the step line
// then shows GFLOP/s) where we do not know it. Spec sheet figures of the SXM parts: bf16 tensor
// cores 989 TFLOP/s on H100 and H200; true f32 (no TF32) 67 TFLOP/s.
double peak_flops(const Device& device, const std::string& dtype) {
  if (!device.is_cuda()) return 0.0;
  const std::string name = cuda_device_name(device.index);
  const bool hopper_sxm = (name.find("H100") != std::string::npos && name.find("PCIe") == std::string::npos) ||
                          name.find("H200") != std::string::npos;
  if (!hopper_sxm) return 0.0;
  return dtype == "bf16" ? 989e12 : 67e12;
}

// The fault guard of a multi-rank run (none for one rank): its line is this command's error line.
std::unique_ptr<dist::FaultGuard> guard_for(dist::Comm& comm, const TrainConfig& config) {
  if (comm.size() < 2) return nullptr;
  dist::FaultOptions options;
  options.comm_timeout_s = config.comm_timeout;
  options.heartbeat_timeout_s = config.heartbeat_timeout;
  return std::make_unique<dist::FaultGuard>(comm, options, [](const std::string& line) {
    std::fprintf(stderr, "nanodist: error: %s\n", line.c_str());
    std::fflush(stderr);
  });
}

}  // namespace

const char* subcommands_help() {
  return "usage: nanodist <command> [flags]   (nanodist <command> --help lists its flags)\n"
         "\n"
         "commands:\n"
         "  prepare        text to token files (train.bin, val.bin, tokenizer.txt)\n"
         "  train          train a GPT on prepared data (CPU, GPU, or many GPUs under mpirun)\n"
         "  sample         generate text from a checkpoint\n"
         "  bench-comm     collective bandwidth curves (run under mpirun)\n"
         "  bench-kernels  per-kernel speed against the machine's ceilings (CUDA builds)\n";
}

int run_prepare_command(int argc, const char* const* argv) {
  FlagSet set = prepare_flags();
  ParsedFlags flags = set.parse(argc, argv);
  if (flags.help_requested) {
    std::cout << set.help();
    return 0;
  }
  PrepareOptions options;
  options.inputs = flags.get_strings("input");
  options.corpus = flags.get_string("corpus");
  options.out_dir = flags.get_string("out");
  ND_CHECK(!options.out_dir.empty(), "--out DIR is required");
  options.tokenizer = flags.get_string("tokenizer");
  options.vocab_size = flags.get_int("vocab-size");
  options.val_fraction = flags.get_double("val-fraction");
  options.progress = tenths_printer();
  options.random_tokens = flags.get_int("random-tokens");
  ND_CHECK(options.random_tokens >= 0, "--random-tokens must be >= 0 (0 = off), got " << options.random_tokens);
  ND_CHECK(options.random_tokens == 0 || (!flags.has("tokenizer") && !flags.has("corpus")),
           "--random-tokens reads no corpus and writes an ids tokenizer; drop --tokenizer and --corpus");
  ND_CHECK(flags.get_int("seed") >= 0, "--seed must be >= 0, got " << flags.get_int("seed"));
  options.seed = static_cast<uint64_t>(flags.get_int("seed"));
  PrepareStats s = prepare(options);
  if (options.random_tokens > 0) {
    std::printf("source %s | %lld tokens | vocab %lld\n", s.source.c_str(), static_cast<long long>(s.tokens),
                static_cast<long long>(s.vocab_size));
  } else {
    std::printf("source %s | %lld chars | %lld tokens | vocab %lld | %.2f chars/token\n", s.source.c_str(),
                static_cast<long long>(s.chars), static_cast<long long>(s.tokens),
                static_cast<long long>(s.vocab_size), s.chars_per_token);
  }
  std::printf("wrote %s (%lld tokens), %s (%lld tokens), %s\n", s.train_path.c_str(),
              static_cast<long long>(s.train_tokens), s.val_path.c_str(), static_cast<long long>(s.val_tokens),
              s.tokenizer_path.c_str());
  return 0;
}

int run_train_command(int argc, const char* const* argv) {
  FlagSet set = train_flag_set();
  ParsedFlags flags = set.parse(argc, argv);
  if (flags.help_requested) {
    std::cout << set.help();
    return 0;
  }
  TrainConfig config = train_config_from_flags(flags);
  // Under mpirun every rank joins the world communicator (MPI for CPU, NCCL for CUDA, which
  // also picks this rank's GPU); alone it is a one-rank LocalComm.
  // Training keeps NCCL's default send/recv channels even for --allreduce ring: the wider
  // communicator that speeds the ring up in bench-comm takes SMs from the backward kernels the
  // all-reduce overlaps (GPT-2 124M on 4 H200: ring DDP 93.0% scaling with it, 94.1% without).
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(parse_device(config.device), /*ring_transfers=*/false);
  if (comm->device().is_cuda()) config.device = comm->device().str();
  validate_train_config(config, comm->size());
  RunContext context;
  context.comm = comm.get();
  context.peak_flops = peak_flops(parse_device(config.device), config.dtype);
  context.log = comm->rank() == 0 ? &std::cout : nullptr;
  std::unique_ptr<dist::FaultGuard> guard = guard_for(*comm, config);
  if (guard) context.watchdog = &guard->watchdog();
  if (comm->rank() == 0) {
    const int dp = config.dp_size(comm->size());
    std::cout << "train: " << config.n_layer << " layers, " << config.n_head << " heads, " << config.n_embd
              << " wide, context " << config.block_size << ", " << config.max_iters << " steps on " << config.device
              << " x " << comm->size() << " rank(s) (" << comm->backend() << ")\n"
              << "global batch " << config.batch_size * config.grad_accum * dp << " sequences = " << config.batch_size
              << " per rank x " << config.grad_accum << " accumulation x " << dp << " data-parallel rank(s)"
              << (dp > 1 ? ", all-reduce " + config.allreduce : std::string()) << std::endl;
  }
  TrainResult result = run_training(config, context);
  if (guard) guard->finish();
  if (comm->rank() == 0) std::cout << final_summary_line(result) << std::endl;
  return 0;
}

int run_sample_command(int argc, const char* const* argv) {
  FlagSet set = sample_flags();
  ParsedFlags flags = set.parse(argc, argv);
  if (flags.help_requested) {
    std::cout << set.help();
    return 0;
  }
  ND_CHECK(flags.has("ckpt"), "--ckpt FILE_OR_DIR is required");
  std::string path = resolve_checkpoint(flags.get_string("ckpt"));
  CheckpointData data = read_checkpoint(path);
  nn::GPTConfig model_config = model_config_from_attributes(data.config, path);
  Device device = parse_device(flags.get_string("device"));
  Generator init_gen(0);
  nn::GPT model(model_config, init_gen, device, DType::F32);
  load_model(data, path, model, nullptr);
  std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_text(data.tokenizer_text, path + ":/tokenizer");

  std::string prompt = flags.get_string("prompt");
  std::vector<int32_t> context = tokenizer->encode(prompt.empty() ? std::string("\n") : prompt);
  ND_CHECK(!context.empty(), "the prompt encodes to no tokens");
  SampleOptions options;
  options.max_new_tokens = static_cast<int>(flags.get_int("tokens"));
  options.temperature = flags.get_double("temperature");
  options.top_k = static_cast<int>(flags.get_int("top-k"));
  ND_CHECK(options.max_new_tokens >= 0, "--tokens must be >= 0, got " << options.max_new_tokens);
  ND_CHECK(options.top_k >= 0, "--top-k must be >= 0, got " << options.top_k);
  ND_CHECK(options.temperature >= 0, "--temperature must be >= 0, got " << options.temperature);
  Generator gen(static_cast<uint64_t>(flags.get_int("seed")), 3);
  std::vector<int32_t> ids = generate(model, context, options, gen);
  std::cout << tokenizer->decode(ids) << std::endl;
  return 0;
}

}  // namespace nd::train
