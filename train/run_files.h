// The files around a training run: the data directory made by `nanodist prepare` (train.bin,
// val.bin, tokenizer.txt; vocabularies must agree) and the output directory (created, and
// checked to be writable before any training time is spent).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/token_file.h"

namespace nd::train {

struct RunData {
  std::shared_ptr<const TokenFile> train;
  std::shared_ptr<const TokenFile> val;
  std::string tokenizer_text;  // DIR/tokenizer.txt, verbatim (stored in checkpoints)
  int64_t vocab_size = 0;
};

// nd::Error naming the file on a missing, truncated or malformed file, or vocabularies that differ.
RunData open_run_data(const std::string& data_dir);

// mkdir -p, then a probe write; nd::Error naming the directory when it cannot be written.
void prepare_output_dir(const std::string& out_dir);

}  // namespace nd::train
