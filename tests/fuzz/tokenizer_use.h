// The use a tokenizer read from a file gets (prepare encodes text, sample decodes ids): shared by
// the tokenizer targets, so a file that parses must also encode, decode and round-trip.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "data/tokenizer.h"

namespace nd::fuzz {

inline void use_tokenizer(const std::unique_ptr<Tokenizer>& tokenizer) {
  const std::string sample = tokenizer->kind() == "ids" ? "0 1 2 0" : "First Citizen:\nBefore we proceed";
  std::vector<int32_t> ids;
  try {
    ids = tokenizer->encode(sample);
  } catch (const Error& e) {  // a char vocabulary without these letters: refusing them is its answer
    if (!e.is_input()) throw;
    return;
  }
  for (int32_t id : ids)
    if (id < 0 || id >= tokenizer->vocab_size()) {
      std::fprintf(stderr, "fuzz finding: encode gave id %d outside the vocabulary of %d\n", id, tokenizer->vocab_size());
      std::abort();
    }
  const std::string back = tokenizer->decode(ids);
  if (tokenizer->kind() != "ids" && back != sample) {
    std::fprintf(stderr, "fuzz finding: decode(encode(text)) differs from the text\n");
    std::abort();
  }
}

}  // namespace nd::fuzz
