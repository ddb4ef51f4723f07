// The files around a training run: the data behind --data (a directory made by `nanodist
// prepare`, llm.c shards or nanoGPT's .bin files; see data/token_dataset.h) and the output
// directory (created, and checked to be writable before any training time is spent).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/token_dataset.h"

namespace nd::train {

// train, val (token streams), tokenizer_text (DIR/tokenizer.txt verbatim, stored in checkpoints;
// empty for llm.c and nanoGPT data), vocab_size, format.
using RunData = TokenDataset;

// vocab_size: --vocab-size (0 = from the data). nd::Error naming the file on a missing,
// truncated or malformed file, a token outside the vocabulary, or vocabularies that differ.
RunData open_run_data(const std::string& data, int64_t vocab_size = 0);

// mkdir -p, then a probe write; nd::Error naming the directory when it cannot be written.
void prepare_output_dir(const std::string& out_dir);

}  // namespace nd::train
