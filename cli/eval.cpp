// `nanodist eval`: a checkpoint's mean loss and perplexity over a whole split of --data, every
// target token scored once (train/split_eval.h says how the split is cut). Under mpirun the ranks
// share the windows, one total is reduced over them, and rank 0 prints one line (or JSON).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/fault_guard_for.h"
#include "cli/subcommand.h"
#include "data/token_dataset.h"
#include "dist/comm/world.h"
#include "nn/gpt.h"
#include "tensor/error.h"
#include "train/ckpt/checkpoint_model.h"
#include "train/metrics.h"
#include "train/multiple_choice.h"
#include "train/split_eval.h"

namespace nd::cli {
namespace {

FlagSet eval_flags() {
  FlagSet set("eval",
              "--ckpt DIR_OR_FILE --data DIR [flags]\n\n"
              "Scores every target token of the split once: its n tokens give n - 1 (input, next token) pairs,\n"
              "cut into consecutive windows of block-size inputs and a shorter last window for the rest; each\n"
              "window starts a fresh context. The model (and block size) come from the checkpoint, whatever tp\n"
              "trained it. Under mpirun the ranks share the windows and rank 0 prints one line:\n"
              "  eval: split val, tokens N, loss L, perplexity P, R tok/s, S s   (--json: one JSON object)\n"
              "With --task hellaswag --file FILE (the published hellaswag_val.jsonl) it scores each example's\n"
              "endings by the loss of their tokens after the context and prints the accuracy: acc by the total\n"
              "loss, acc_norm by the mean per token (llm.c's figure), instead of --data's loss.");
  set.add(flag("ckpt", "", "checkpoint file, or a run directory (its newest checkpoint) (required)"))
      .add(flag("data", "", "data: a nanodist prepare directory, llm.c shards (directory or glob) or nanoGPT "
                            "train.bin/val.bin (required)"))
      .add(flag("split", "val", "val or train"))
      .add(flag("max-tokens", "0", "score only the first N target tokens of the split (0 = all of it)", FlagType::Int))
      .add(flag("batch-size", "8", "windows of block-size tokens per forward (per rank)", FlagType::Int))
      .add(flag("device", "cpu", "cpu or cuda (under mpirun: one GPU per rank)"))
      .add(flag("dtype", "f32", "f32 or bf16 (bf16 needs cuda)"))
      .add(flag("json", "false", "print one JSON object instead of the text line", FlagType::Bool))
      .add(flag("task", "", "hellaswag: multiple-choice accuracy over --file instead of --data's loss"))
      .add(flag("file", "", "with --task hellaswag: the examples, one JSON object a line (ctx, endings, label)"))
      .add(flag("max-examples", "0", "with --task: score only the first N examples (0 = all)", FlagType::Int));
  return set;
}

// The split the flags ask for, opened alone and checked against the checkpoint's vocabulary and
// tokenizer. Formats without a recorded vocabulary (llm.c, nanoGPT) take the checkpoint's.
std::shared_ptr<const TokenSource> open_split(const std::string& data_path, const std::string& split,
                                              const train::CheckpointData& ckpt, const nn::GPTConfig& model,
                                              const std::string& ckpt_path) {
  const DatasetSplits which = split == "val" ? DatasetSplits::Val : DatasetSplits::Train;
  const int64_t vocab = records_vocab_size(data_path) ? 0 : model.vocab_size;
  TokenDataset data = open_token_dataset(data_path, vocab, which);
  ND_CHECK_INPUT(data.vocab_size == model.vocab_size,
                 "vocabulary mismatch: " << ckpt_path << " was trained on " << model.vocab_size << " tokens, "
                                         << data_path << " has " << data.vocab_size
                                         << "; evaluate on data made with the checkpoint's tokenizer");
  ND_CHECK_INPUT(ckpt.tokenizer_text.empty() || data.tokenizer_text.empty() ||
                     ckpt.tokenizer_text == data.tokenizer_text,
                 "tokenizer mismatch: " << data_path << "/tokenizer.txt is not the tokenizer " << ckpt_path
                                        << " was trained with (same size, other tokens)");
  return which == DatasetSplits::Val ? data.val : data.train;
}

// The one output line; `step` is the checkpoint's training step.
std::string result_line(const std::string& split, const train::SplitScore& s, double seconds, bool json,
                        int64_t step) {
  const double loss = s.mean_loss(), perplexity = std::exp(loss);
  const double tok_per_s = seconds > 0 ? static_cast<double>(s.tokens) / seconds : 0.0;
  char line[512];
  if (json)
    std::snprintf(line, sizeof(line),
                  "{\"split\":\"%s\",\"tokens\":%lld,\"loss\":%.6f,\"perplexity\":%.6g,\"tok_per_s\":%.1f,"
                  "\"seconds\":%.3f,\"step\":%lld}",
                  split.c_str(), static_cast<long long>(s.tokens), loss, perplexity, tok_per_s, seconds,
                  static_cast<long long>(step));
  else
    std::snprintf(line, sizeof(line), "eval: split %s, tokens %lld, loss %.4f, perplexity %.4g, %s tok/s, %.2f s",
                  split.c_str(), static_cast<long long>(s.tokens), loss, perplexity,
                  train::format_rate(tok_per_s).c_str(), seconds);
  return line;
}

int run_eval(const ParsedFlags& flags) {
  ND_CHECK_INPUT(flags.has("ckpt"), "--ckpt FILE_OR_DIR is required (a checkpoint, or the --out directory of a run)");
  const std::string task = flags.get_string("task");
  ND_CHECK_INPUT(task.empty() || task == "hellaswag", "--task must be hellaswag, got '" << task << "'");
  ND_CHECK_INPUT(!task.empty() || flags.has("data"), "--data DIR is required (the data to score the checkpoint on)");
  ND_CHECK_INPUT(task.empty() || flags.has("file"), "--task hellaswag needs --file (the HellaSwag jsonl)");
  const int64_t max_examples = flags.get_int("max-examples");
  ND_CHECK_INPUT(max_examples >= 0, "--max-examples must be >= 0 (0 = all), got " << max_examples);
  const std::string split = flags.get_string("split");
  ND_CHECK_INPUT(split == "val" || split == "train", "--split must be val or train, got '" << split << "'");
  const int64_t max_tokens = flags.get_int("max-tokens"), batch_size = flags.get_int("batch-size");
  ND_CHECK_INPUT(max_tokens >= 0, "--max-tokens must be >= 0 (0 = the whole split), got " << max_tokens);
  ND_CHECK_INPUT(batch_size > 0, "--batch-size must be positive, got " << batch_size);
  const DType dtype = parse_dtype(flags.get_string("dtype"));
  ND_CHECK_INPUT(dtype == DType::F32 || dtype == DType::BF16,
                 "--dtype must be f32 or bf16, got " << flags.get_string("dtype"));
  Device device = parse_device(flags.get_string("device"));
  ND_CHECK_INPUT(dtype == DType::F32 || device.is_cuda(), "--dtype bf16 needs --device cuda");
  ND_CHECK_INPUT(!device.is_cuda() || cuda_available(),
                 "--device " << flags.get_string("device") << " but this build or machine has no CUDA GPU; drop --device");

  // Every rank reads the checkpoint and the data itself: the same input gives every rank the same
  // error, so a bad flag or file never leaves a rank waiting in a collective.
  std::string ckpt_path;
  std::vector<std::string> skipped;
  train::CheckpointData ckpt = train::read_newest_checkpoint(flags.get_string("ckpt"), ckpt_path, skipped);
  for (const std::string& line : skipped) std::cerr << "nanodist: " << line << std::endl;
  nn::GPTConfig model_config = train::model_config_from_checkpoint(ckpt, ckpt_path);
  std::shared_ptr<const TokenSource> tokens;
  std::vector<train::ChoiceExample> examples;
  if (task.empty()) {
    tokens = open_split(flags.get_string("data"), split, ckpt, model_config, ckpt_path);
  } else {
    ND_CHECK_INPUT(!ckpt.tokenizer_text.empty(),
                   ckpt_path << " has no tokenizer to encode the examples with (trained on llm.c or nanoGPT token "
                                "files); score a model trained on data made by nanodist prepare");
    examples = train::read_hellaswag(flags.get_string("file"));
    if (max_examples > 0 && static_cast<int64_t>(examples.size()) > max_examples) examples.resize(max_examples);
  }

  // Under mpirun: MPI on the CPU, NCCL on the GPU (which also picks this rank's GPU).
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(device, /*ring_transfers=*/false);
  if (comm->device().is_cuda()) device = comm->device();
  std::unique_ptr<dist::FaultGuard> guard = fault_guard_for(*comm, /*comm_timeout_s=*/0.0, /*heartbeat_timeout_s=*/15.0);

  // The whole model on every rank (checkpoints hold full tensors, whatever tp wrote them), with the
  // vocabulary padding this device wants; load_model zero-fills the padding rows.
  model_config.padded_vocab_size = nn::padded_vocab_rows(model_config.vocab_size, 1, device.is_cuda());
  Generator init_gen(0);
  nn::GPT model(model_config, init_gen, device, dtype);
  train::load_model(ckpt, ckpt_path, model, nullptr);
  model.set_training(false);

  const auto start = std::chrono::steady_clock::now();
  if (!task.empty()) {
    const std::unique_ptr<Tokenizer> tokenizer = train::tokenizer_from_text(ckpt.tokenizer_text, ckpt_path + ":/tokenizer");
    const train::ChoiceAccuracy a = train::score_examples(model, examples, *tokenizer, comm.get());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (guard) guard->finish();
    if (comm->rank() == 0) {
      char line[256];
      if (flags.get_bool("json"))
        std::snprintf(line, sizeof line, "{\"task\":\"%s\",\"examples\":%lld,\"acc\":%.6f,\"acc_norm\":%.6f,\"seconds\":%.3f,\"step\":%lld}",
                      task.c_str(), static_cast<long long>(a.examples), a.acc(), a.acc_norm(), seconds,
                      static_cast<long long>(ckpt.state.step));
      else
        std::snprintf(line, sizeof line, "eval: task %s, examples %lld, acc %.4f, acc_norm %.4f, %.2f s", task.c_str(),
                      static_cast<long long>(a.examples), a.acc(), a.acc_norm(), seconds);
      std::cout << line << std::endl;
    }
    return 0;
  }
  train::SplitScore score = train::score_split(model, *tokens, max_tokens, batch_size, comm.get());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (guard) guard->finish();
  if (comm->rank() == 0)
    std::cout << result_line(split, score, seconds, flags.get_bool("json"), ckpt.state.step) << std::endl;
  return 0;
}

}  // namespace

Subcommand eval_command() {
  return {"eval", "mean loss and perplexity of a checkpoint over a whole data split", eval_flags, run_eval};
}

}  // namespace nd::cli
