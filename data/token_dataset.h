// The training and validation token streams behind `--data`, whatever wrote them. What is
// there decides the format:
//   DIR with tokenizer.txt             nanodist prepare: train.bin, val.bin in our format
//   DIR/train.bin with an llm.c magic  llm.c shards that happen to be called train/val.bin
//   DIR/train.bin otherwise            nanoGPT: raw u16, vocabulary (and char tokenizer) from its
//                                      meta.pkl, else --vocab-size
//   DIR of *.bin otherwise             llm.c shards, "train" or "val" a word of each name
//   a glob ("dir/fineweb_train_*.bin") llm.c shards; a "train" pattern also reads its "val" twin
// Shards are read in name order as one stream per split.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/token_source.h"

namespace nd {

// Which splits to open. Eval reads one split and neither reads nor requires the other (an llm.c
// val shard downloaded alone, without the gigabytes of its train shards, is enough).
enum class DatasetSplits { Both, Train, Val };

struct TokenDataset {
  std::shared_ptr<const TokenSource> train;  // null when not opened (DatasetSplits::Val)
  std::shared_ptr<const TokenSource> val;    // null when not opened (DatasetSplits::Train)
  // DIR/tokenizer.txt verbatim; empty when the data has no nanodist tokenizer (llm.c, nanoGPT):
  // such a run trains, but its ids cannot be turned back into text.
  std::string tokenizer_text;
  int64_t vocab_size = 0;
  std::string format;  // for humans: "nanodist char", "llm.c GPT-2 shards (2 train, 1 val)", ...
};

// vocab_size: 0 = what the data records (ours), the tokenizer's own for llm.c (50257 GPT-2,
// 128256 Llama 3), meta.pkl's for nanoGPT's files (else required); where the data records one they
// must agree.
// nd::Error naming the file on anything missing, malformed, or out of the vocabulary.
TokenDataset open_token_dataset(const std::string& data, int64_t vocab_size = 0,
                                DatasetSplits splits = DatasetSplits::Both);

// True when `data` is a directory made by nanodist prepare, whose files record their vocabulary
// (the other formats take it from the caller).
bool records_vocab_size(const std::string& data);

}  // namespace nd
