// `nanodist prepare`: text (files or a named corpus) or random ids to token files, with progress.
#include <cstdio>
#include <memory>

#include "cli/subcommand.h"
#include "cli/threads.h"
#include "data/data_dir_contents.h"
#include "data/prepare.h"
#include "data/text_stream.h"
#include "tensor/error.h"
#include "train/ckpt/init_from.h"

namespace nd::cli {
namespace {

// The defaults below, spelled as flag text.
static_assert(kDefaultShardTokens == 1000000000 && kDefaultBpeSampleBytes == int64_t{32} << 20);

FlagSet prepare_flags() {
  FlagSet set("prepare",
              "(--input FILE|GLOB|DIR [--input ...] | --corpus kjv|shakespeare | --random-tokens N --vocab-size V) "
              "--out DIR [flags]");
  set.add(flag("input", "",
               "text to tokenize: a file, a quoted glob ('books/*.txt') or a directory of files (several are "
               "concatenated in order; any size: encoded on all cores with bounded memory, and an interrupted run "
               "goes on from where it stopped when run again)",
               FlagType::String, true))
      .add(flag("corpus", "", "named corpus to tokenize instead of --input: kjv or shakespeare"))
      .add(flag("out", "", "directory for train.bin, val.bin, tokenizer.txt (required)"))
      .add(flag("tokenizer", "char", "char or bpe"))
      .add(flag("tokenizer-from", "",
                "encode with the tokenizer of this checkpoint (file or run directory) or exported Hugging Face "
                "directory instead of learning one (to fine-tune it with train --init-from on new text)"))
      .add(flag("vocab-size", "0", "bpe vocabulary size, >= 256 (0 = 2048); with --random-tokens the id vocabulary",
                FlagType::Int))
      .add(flag("val-fraction", "0.1", "share of the tokens that goes to val.bin", FlagType::Float))
      .add(flag("shard-tokens", "1000000000",
                "most tokens in one file: a larger split is written as train_000000.bin, train_000001.bin, ...",
                FlagType::Int))
      .add(flag("bpe-sample-mb", "32",
                "MiB of the text, spread over all of it, that a bpe vocabulary is learned from", FlagType::Int))
      .add(flag("random-tokens", "0",
                "benchmark data: N uniform random ids in train.bin, N/10 in val.bin, an ids tokenizer (0 = off)",
                FlagType::Int))
      .add(flag("seed", "1337", "seed of --random-tokens", FlagType::Int))
      .add(flag("overwrite", "false",
                "write into an --out that holds files prepare did not write (they stay; token files and "
                "tokenizer.txt of the same names are replaced)",
                FlagType::Bool));
  return set;
}

// "a.txt, b.txt, c.txt and 4 more"
std::string some_of(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 3; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > 3) out += " and " + std::to_string(names.size() - 3) + " more";
  return out;
}

// An --out holding anything but prepare's own output (a run, someone's files, nanoGPT's data) is
// refused before any work: the token files would land among them, or over theirs.
void check_output_dir_is_prepares(const PrepareOptions& options) {
  std::vector<std::string> inputs = options.inputs;
  if (!options.inputs.empty()) {
    const std::vector<std::string> files = expand_text_inputs(options.inputs, options.out_dir);
    inputs.insert(inputs.end(), files.begin(), files.end());
  }
  const std::vector<std::string> foreign = entries_not_from_prepare(options.out_dir, inputs);
  ND_CHECK_INPUT(foreign.empty(), "--out " << options.out_dir << " holds files nanodist prepare did not write ("
                                           << some_of(foreign) << "); pick an empty or new --out, or pass --overwrite "
                                           << "to write the token files and tokenizer.txt beside them");
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
  options.shard_tokens = flags.get_int("shard-tokens");
  const int64_t sample_mb = flags.get_int("bpe-sample-mb");
  ND_CHECK_INPUT(sample_mb >= 1 && sample_mb <= (int64_t{1} << 30), "--bpe-sample-mb must be >= 1, got " << sample_mb);
  options.bpe_sample_bytes = sample_mb << 20;
  options.threads = apply_thread_count(flags.threads);
  options.progress = tenths_printer();
  options.random_tokens = flags.get_int("random-tokens");
  ND_CHECK_INPUT(options.random_tokens >= 0, "--random-tokens must be >= 0 (0 = off), got " << options.random_tokens);
  ND_CHECK_INPUT(options.random_tokens == 0 || (!flags.has("tokenizer") && !flags.has("corpus")),
                 "--random-tokens reads no corpus and writes an ids tokenizer; drop --tokenizer and --corpus");
  ND_CHECK_INPUT(flags.get_int("seed") >= 0, "--seed must be >= 0, got " << flags.get_int("seed"));
  options.seed = static_cast<uint64_t>(flags.get_int("seed"));
  if (!flags.get_bool("overwrite")) check_output_dir_is_prepares(options);
  PrepareStats s = prepare(options);
  if (s.resumed_at >= 0)
    std::printf("resumed an unfinished prepare at byte %lld of the text\n", static_cast<long long>(s.resumed_at));
  if (options.random_tokens > 0) {
    std::printf("source %s | %lld tokens | vocab %lld\n", s.source.c_str(), static_cast<long long>(s.tokens),
                static_cast<long long>(s.vocab_size));
  } else {
    std::printf("source %s | %lld chars | %lld tokens | vocab %lld | %.2f chars/token\n", s.source.c_str(),
                static_cast<long long>(s.chars), static_cast<long long>(s.tokens),
                static_cast<long long>(s.vocab_size), s.chars_per_token);
  }
  auto files = [](const std::string& first, int64_t count) {
    return count == 1 ? first : first + " and " + std::to_string(count - 1) + " more";
  };
  std::printf("wrote %s (%lld tokens), %s (%lld tokens), %s\n", files(s.train_path, s.train_files).c_str(),
              static_cast<long long>(s.train_tokens), files(s.val_path, s.val_files).c_str(),
              static_cast<long long>(s.val_tokens), s.tokenizer_path.c_str());
  return 0;
}

}  // namespace

Subcommand prepare_command() {
  return {"prepare", "text to token files (train.bin, val.bin, tokenizer.txt)", prepare_flags, run_prepare};
}

}  // namespace nd::cli
