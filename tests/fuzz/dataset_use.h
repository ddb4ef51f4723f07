// The use --data gets, shared by the token-file targets: open the dataset the way `train` does
// (its training split), read windows at both ends as the loader does, and parse the tokenizer it
// brings, if any.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "data/token_dataset.h"
#include "data/tokenizer.h"

namespace nd::fuzz {

inline void use_dataset(const std::string& dir, int64_t vocab_size) {
  const TokenDataset data = open_token_dataset(dir, vocab_size, DatasetSplits::Train);
  const TokenSource& train = *data.train;
  const int64_t n = std::min<int64_t>(train.size(), 16);
  std::vector<int32_t> window(static_cast<size_t>(n));
  train.copy(0, n, window.data());
  train.copy(train.size() - n, n, window.data());
  if (!data.tokenizer_text.empty()) Tokenizer::from_text(data.tokenizer_text, dir);
}

}  // namespace nd::fuzz
