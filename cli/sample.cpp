// `nanodist sample`: load a checkpoint's model and tokenizer, continue a prompt, print the text
// (once: under mpirun on rank 0 only).
#include <iostream>
#include <memory>

#include "cli/launcher_rank.h"
#include "cli/subcommand.h"
#include "nn/gpt.h"
#include "tensor/error.h"
#include "train/ckpt/checkpoint_model.h"
#include "train/sampler.h"

namespace nd::cli {
namespace {

FlagSet sample_flags() {
  FlagSet set("sample", "--ckpt DIR_OR_FILE [--prompt TEXT] [flags]");
  set.add(flag("ckpt", "", "checkpoint file, or a directory (its newest checkpoint) (required)"))
      .add(flag("prompt", "", "text to continue (default: a newline)"))
      .add(flag("tokens", "200", "tokens to generate", FlagType::Int))
      .add(flag("temperature", "0.8", "softmax temperature (0 = greedy)", FlagType::Float))
      .add(flag("top-k", "200", "sample among the k likeliest tokens (0 = all)", FlagType::Int))
      .add(flag("top-p", "1", "then among the fewest likeliest tokens that hold this share of the probability "
                              "(nucleus sampling; 1 = all)", FlagType::Float))
      .add(flag("num-samples", "1", "samples to draw from the prompt, one after another", FlagType::Int))
      .add(flag("stop", "", "end a sample where it produces this text (it is kept); default: --tokens tokens"))
      .add(flag("seed", "1337", "sampling seed", FlagType::Int))
      .add(flag("device", "cpu", "cpu or cuda"));
  return set;
}

int run_sample(const ParsedFlags& flags) {
  using namespace train;
  ND_CHECK_INPUT(flags.has("ckpt"), "--ckpt FILE_OR_DIR is required (a checkpoint, or the --out directory of a run)");
  std::string path;
  std::vector<std::string> skipped;
  CheckpointData data = read_newest_checkpoint(flags.get_string("ckpt"), path, skipped);
  for (const std::string& line : skipped) std::cerr << "nanodist: " << line << std::endl;
  nn::GPTConfig model_config = model_config_from_checkpoint(data, path);
  Device device = parse_device(flags.get_string("device"));
  ND_CHECK_INPUT(!device.is_cuda() || cuda_available(),
                 "--device " << flags.get_string("device") << " but this build or machine has no CUDA GPU; drop --device");
  ND_CHECK_INPUT(!data.tokenizer_text.empty(),
                 path << " has no tokenizer: its model was trained on token files without a nanodist tokenizer (llm.c shards or "
                      << "nanoGPT .bin), so no text can be turned into ids and back; sample a model trained on "
                      << "data made by nanodist prepare");
  Generator init_gen(0);
  nn::GPT model(model_config, init_gen, device, DType::F32);
  load_model(data, path, model, nullptr);
  std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_text(data.tokenizer_text, path + ":/tokenizer");

  std::string prompt = flags.get_string("prompt");
  std::vector<int32_t> context = tokenizer->encode(prompt.empty() ? std::string("\n") : prompt);
  ND_CHECK_INPUT(!context.empty() || tokenizer->kind() != "ids",
                 path << " was trained on bare token ids (prepare --random-tokens): give --prompt as ids, e.g. "
                      << "--prompt '1 2 3'");
  ND_CHECK_INPUT(!context.empty(), "the prompt encodes to no tokens; give a --prompt with some text");
  SampleOptions options;
  options.max_new_tokens = static_cast<int>(flags.get_int("tokens"));
  options.temperature = flags.get_double("temperature");
  options.top_k = static_cast<int>(flags.get_int("top-k"));
  options.top_p = flags.get_double("top-p");
  const int64_t samples = flags.get_int("num-samples");
  const std::string stop = flags.get_string("stop");
  if (!stop.empty())
    options.stop = [&](const std::vector<int32_t>& generated) {
      return tokenizer->decode(generated).find(stop) != std::string::npos;
    };
  ND_CHECK_INPUT(options.max_new_tokens >= 0, "--tokens must be >= 0, got " << options.max_new_tokens);
  ND_CHECK_INPUT(options.top_k >= 0, "--top-k must be >= 0, got " << options.top_k);
  ND_CHECK_INPUT(options.temperature >= 0, "--temperature must be >= 0, got " << options.temperature);
  ND_CHECK_INPUT(options.top_p > 0 && options.top_p <= 1, "--top-p must be in (0, 1], got " << options.top_p);
  ND_CHECK_INPUT(samples >= 1, "--num-samples must be >= 1, got " << samples);
  // Under mpirun every rank got the same command: each has checked it (a bad flag fails the same
  // everywhere), and rank 0 alone samples and prints, so the text appears once.
  if (launcher_rank() != 0) return 0;
  Generator gen(static_cast<uint64_t>(flags.get_int("seed")), 3);
  for (int64_t i = 0; i < samples; ++i) {
    if (i > 0) std::cout << "---------------" << std::endl;  // nanoGPT's separator between samples
    std::vector<int32_t> ids = generate(model, context, options, gen);
    std::string text = tokenizer->decode(ids);
    if (!stop.empty()) {  // cut after the stop text, which the last token may overshoot
      const size_t prompt_chars = tokenizer->decode(context).size();
      const size_t at = text.find(stop, prompt_chars);
      if (at != std::string::npos) text.resize(at + stop.size());
    }
    std::cout << text << std::endl;
  }
  return 0;
}

}  // namespace

Subcommand sample_command() {
  return {"sample", "generate text from a checkpoint", sample_flags, run_sample};
}

}  // namespace nd::cli
