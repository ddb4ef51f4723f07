// `nanodist prepare`: text (files or a named corpus) or random ids to token files, with progress.
#include <cstdio>
#include <memory>

#include "cli/subcommand.h"
#include "data/prepare.h"
#include "tensor/error.h"
#include "train/ckpt/init_from.h"

namespace nd::cli {
namespace {

FlagSet prepare_flags() {
  FlagSet set("prepare",
              "(--input FILE [--input FILE ...] | --corpus kjv|shakespeare | --random-tokens N --vocab-size V) "
              "--out DIR [flags]");
  set.add(flag("input", "", "text file to tokenize (several are concatenated)", FlagType::String, true))
      .add(flag("corpus", "", "named corpus to tokenize instead of --input: kjv or shakespeare"))
      .add(flag("out", "", "directory for train.bin, val.bin, tokenizer.txt (required)"))
      .add(flag("tokenizer", "char", "char or bpe"))
      .add(flag("tokenizer-from", "",
                "encode with the tokenizer of this checkpoint (file or run directory) or exported Hugging Face "
                "directory instead of learning one (to fine-tune it with train --init-from on new text)"))
      .add(flag("vocab-size", "0", "bpe vocabulary size, >= 256 (0 = 2048); with --random-tokens the id vocabulary",
                FlagType::Int))
      .add(flag("val-fraction", "0.1", "share of the tokens that goes to val.bin", FlagType::Float))
      .add(flag("random-tokens", "0",
                "benchmark data: N uniform random ids in train.bin, N/10 in val.bin, an ids tokenizer (0 = off)",
                FlagType::Int))
      .add(flag("seed", "1337", "seed of --random-tokens", FlagType::Int));
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

int run_prepare(const ParsedFlags& flags) {
  PrepareOptions options;
  options.inputs = flags.get_strings("input");
  options.corpus = flags.get_string("corpus");
  ND_CHECK_INPUT(!options.inputs.empty() || !options.corpus.empty() || flags.get_int("random-tokens") > 0,
                 "nothing to prepare: give --input FILE (your text), --corpus kjv|shakespeare or --random-tokens N");
  ND_CHECK_INPUT(options.inputs.empty() || options.corpus.empty(),
                 "--input and --corpus both given: prepare reads one source; drop one");
  options.out_dir = flags.get_string("out");
  ND_CHECK_INPUT(!options.out_dir.empty(), "--out DIR is required (where train.bin, val.bin, tokenizer.txt go)");
  options.tokenizer = flags.get_string("tokenizer");
  if (flags.has("tokenizer-from")) {
    ND_CHECK_INPUT(!flags.has("tokenizer") && !flags.has("vocab-size"),
                   "--tokenizer-from takes the checkpoint's tokenizer as it is; drop --tokenizer and --vocab-size");
    options.tokenizer_source = flags.get_string("tokenizer-from");
    options.tokenizer_text = train::tokenizer_text_of(options.tokenizer_source);
  }
  options.vocab_size = flags.get_int("vocab-size");
  options.val_fraction = flags.get_double("val-fraction");
  options.progress = tenths_printer();
  options.random_tokens = flags.get_int("random-tokens");
  ND_CHECK_INPUT(options.random_tokens >= 0, "--random-tokens must be >= 0 (0 = off), got " << options.random_tokens);
  ND_CHECK_INPUT(options.random_tokens == 0 || (!flags.has("tokenizer") && !flags.has("corpus")),
                 "--random-tokens reads no corpus and writes an ids tokenizer; drop --tokenizer and --corpus");
  ND_CHECK_INPUT(flags.get_int("seed") >= 0, "--seed must be >= 0, got " << flags.get_int("seed"));
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

}  // namespace

Subcommand prepare_command() {
  return {"prepare", "text to token files (train.bin, val.bin, tokenizer.txt)", prepare_flags, run_prepare};
}

}  // namespace nd::cli
