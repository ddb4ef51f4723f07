// `nanodist prepare` as a library call: text (files, globs, directories of files, or a named
// corpus) -> tokenizer -> DIR/train.bin (first 1 - val_fraction of the tokens), DIR/val.bin (the
// rest), DIR/tokenizer.txt; or, for speed benchmarks, uniformly random ids with an "ids" tokenizer.
// Text of any size streams through: it is encoded in pieces on `threads` threads with bounded
// memory, a split larger than `shard_tokens` is written as train_000000.bin, train_000001.bin, ...
// (val likewise), and a BPE vocabulary is learned from a sample of `bpe_sample_bytes`. An
// interrupted job keeps its work in DIR/prepare.unfinished/; the same call again goes on from its
// last checkpoint and writes the same files as an uninterrupted one.
// Returns counts for the CLI to print; prints nothing itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace nd {

constexpr int64_t kDefaultBpeVocabSize = 2048;
constexpr int64_t kDefaultShardTokens = 1000000000;          // 2 GB files of u16 ids
constexpr int64_t kDefaultBpeSampleBytes = int64_t{32} << 20;  // 32 MiB
constexpr const char* kPrepareWorkDir = "prepare.unfinished";

struct PrepareOptions {
  std::vector<std::string> inputs;  // files, globs or directories, concatenated; when empty `corpus` is read
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
  int64_t shard_tokens = kDefaultShardTokens;          // most tokens in one file, >= 1
  int64_t bpe_sample_bytes = kDefaultBpeSampleBytes;   // text a BPE vocabulary is learned from, >= 1
  int threads = 0;                                     // encoding threads; 0 = the machine's
  int64_t piece_bytes = int64_t{4} << 20;              // text per piece a thread encodes
  double checkpoint_seconds = 10;                      // between saves of the progress; 0 = every piece
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
  std::string train_path, val_path, tokenizer_path;  // the first file of each split
  int64_t train_files = 1, val_files = 1;
  int64_t resumed_at = -1;  // >= 0: the byte of the text an unfinished job went on from
};

// nd::Error on: no text, empty text, val_fraction outside (0, 1), unknown tokenizer, bpe
// vocab_size < 256, too few tokens to give both splits a token, an out_dir that cannot be
// created or written, an unfinished job of other inputs or options in it, and whatever reading
// the inputs raises.
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
