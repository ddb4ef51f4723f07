// Character-level tokenizer (nanoGPT's shakespeare_char): the vocabulary is the sorted set of
// bytes seen in the training text, and id i is the i-th smallest byte.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace nd {

class CharTokenizer : public Tokenizer {
 public:
  // nd::Error on an empty text.
  static CharTokenizer train(const std::string& text);
  // `symbols` must be strictly increasing and non-empty.
  explicit CharTokenizer(std::vector<unsigned char> symbols);
  // Parses the contents of a file written by save(); `path` names it in errors.
  static CharTokenizer parse(const std::string& file_text, const std::string& path);

  std::string kind() const override { return "char"; }
  int32_t vocab_size() const override { return static_cast<int32_t>(symbols_.size()); }
  using Tokenizer::encode;
  std::vector<int32_t> encode(const std::string& text, const ProgressFn& progress) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(const std::string& path) const override;
  std::string to_text() const;  // what save() writes

  const std::vector<unsigned char>& symbols() const { return symbols_; }

 private:
  std::vector<unsigned char> symbols_;
  std::array<int32_t, 256> id_of_byte_;  // -1 for bytes outside the vocabulary
};

}  // namespace nd
