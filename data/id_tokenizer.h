// Tokenizer of bare token ids, for token streams that never were text (random tokens for speed
// benchmarks): encode reads whitespace-separated decimal ids, decode writes them joined by single
// spaces. Its file is "nanodist-tokenizer ids" then "vocab_size N"; nothing else is learned.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace nd {

class IdTokenizer : public Tokenizer {
 public:
  // nd::Error unless vocab_size >= 1.
  explicit IdTokenizer(int64_t vocab_size);
  // Parses the contents of a file written by save(); `path` names it in errors.
  static IdTokenizer parse(const std::string& file_text, const std::string& path);

  std::string kind() const override { return "ids"; }
  int32_t vocab_size() const override { return vocab_size_; }
  using Tokenizer::encode;
  // nd::Error on a word that is not a decimal number, or an id >= vocab_size.
  std::vector<int32_t> encode(const std::string& text, const ProgressFn& progress) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(const std::string& path) const override;

 private:
  int32_t vocab_size_;
};

}  // namespace nd
