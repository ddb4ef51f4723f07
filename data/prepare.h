// `nanodist prepare` as a library call: text (files or a named corpus) -> tokenizer ->
// DIR/train.bin (first 1 - val_fraction of the tokens), DIR/val.bin (the rest),
// DIR/tokenizer.txt; or, for speed benchmarks, uniformly random ids with an "ids" tokenizer.
// Returns counts for the CLI to print; prints nothing itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace nd {

constexpr int64_t kDefaultBpeVocabSize = 2048;

struct PrepareOptions {
  std::vector<std::string> inputs;  // text files, concatenated; when empty `corpus` is read
  std::string corpus = "kjv";       // "kjv" | "shakespeare" (see corpus.h)
  std::string out_dir;              // created if missing
  std::string tokenizer = "char";   // "char" | "bpe"
  // Non-empty: encode with this tokenizer file (a checkpoint's, for fine-tuning on new text)
  // instead of learning one from the text; `tokenizer_source` names it in errors.
  std::string tokenizer_text;
  std::string tokenizer_source;
  int64_t vocab_size = 0;           // bpe: total vocabulary, >= 256; 0 = kDefaultBpeVocabSize. char: unused.
                                    // random tokens: the id vocabulary, >= 1 (required)
  double val_fraction = 0.1;        // in (0, 1)
  ProgressFn progress;              // fraction of the whole job; optional
  // > 0: no text at all; train.bin gets this many uniform ids in [0, vocab_size), val.bin a
  // tenth as many (drawn from Philox with `seed`), tokenizer.txt is an IdTokenizer.
  int64_t random_tokens = 0;
  uint64_t seed = 1337;
};

struct PrepareStats {
  std::string source;      // the files or corpus name, for the summary line
  int64_t chars = 0;       // bytes of text
  int64_t tokens = 0;
  int64_t vocab_size = 0;  // actual (BPE stops early when no pair is left to merge)
  double chars_per_token = 0;
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  std::string train_path, val_path, tokenizer_path;
};

// nd::Error on: no text, empty text, val_fraction outside (0, 1), unknown tokenizer, bpe
// vocab_size < 256, too few tokens to give both splits a token, an out_dir that cannot be
// created or written, and whatever reading the inputs raises.
// With random_tokens > 0 this is prepare_random_tokens().
PrepareStats prepare(const PrepareOptions& options);

// Random-token files: train token i is Philox(seed, counter i), val token j
// is Philox(seed, counter random_tokens + j), each reduced mod vocab_size from 64 random bits.
// nd::Error on vocab_size < 1, random_tokens < 10 (val needs a token), inputs given, or an
// out_dir that cannot be written. Stats: chars 0, tokens = train + val.
PrepareStats prepare_random_tokens(const PrepareOptions& options);

// The same from text already in memory (`source` names it in the stats).
PrepareStats prepare_text(const std::string& text, const std::string& source, const PrepareOptions& options);

}  // namespace nd
