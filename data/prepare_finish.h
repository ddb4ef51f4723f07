// The end of `prepare`: the parts of the encoded text split into the training tokens (the first
// 1 - val_fraction of them) and the validation tokens (the rest), moved into the output directory
// as train.bin and val.bin, or train_000000.bin, ... and val_000000.bin, ... where a split spans
// several parts, with tokenizer.txt beside them. Every step can be done again after a crash.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/prepare_state.h"

namespace nd {

struct FinishedSplits {
  std::vector<std::string> train, val;  // the files written, in order
  int64_t train_tokens = 0, val_tokens = 0;
};

// `source` names the text in the error for too few tokens (which removes the work directory,
// since a rerun would fail alike).
FinishedSplits finish_prepare(const std::string& out_dir, const std::string& work_dir, const PrepareState& state,
                              int64_t vocab_size, double val_fraction, const std::string& source);

// True for the names prepare gives token files: train.bin, val.bin, train_NNNNNN.bin, val_NNNNNN.bin.
bool is_prepared_split_name(const std::string& name, const std::string& split);

}  // namespace nd
