// GPT-2's byte-level BPE as Hugging Face ships it (vocab.json + merges.txt, or tokenizer.json),
// read into a nanodist tokenizer so `sample`, `eval` and `prepare --tokenizer-from` use GPT-2's
// ids. GPT-2's vocabulary is the 256 bytes (in its own order: each byte shown as one printable
// character, bytes_to_unicode), then one token per merge in rank order, then <|endoftext|>; so it
// is nanodist's BPE (ids 0..255 = bytes, merge i = id 256 + i) with the byte ids permuted and the
// special tokens after the merges. Its file (kind "gpt2") keeps the byte ids, the merges in
// GPT-2 ids and the special tokens. Text is pre-split as nanodist's BPE does, which follows
// GPT-2's pattern on ASCII text; on other text ids can differ from GPT-2's (decoding is exact).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/bpe_tokenizer.h"
#include "data/tokenizer.h"

namespace nd {

class Gpt2Tokenizer : public Tokenizer {
 public:
  // byte_ids[b]: GPT-2's id of byte b (a permutation of 0..255); merges in GPT-2 ids, merge i
  // making id 256 + i; specials (id, text) from 256 + merges.size() on, in order.
  Gpt2Tokenizer(std::vector<int32_t> byte_ids, const std::vector<BpeMerge>& merges,
                std::vector<std::pair<int32_t, std::string>> specials);
  // Parses the contents of a file written by save(); `path` names it in errors.
  static Gpt2Tokenizer parse(const std::string& file_text, const std::string& path);

  std::string kind() const override { return "gpt2"; }
  int32_t vocab_size() const override;
  using Tokenizer::encode;
  std::vector<int32_t> encode(const std::string& text, const ProgressFn& progress) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(const std::string& path) const override;
  std::string file_text() const;

 private:
  std::vector<int32_t> byte_ids_;   // byte -> GPT-2 id
  std::vector<int32_t> byte_of_;    // GPT-2 id < 256 -> byte
  std::vector<BpeMerge> merges_;    // in GPT-2 ids
  std::vector<std::pair<int32_t, std::string>> specials_;
  BpeTokenizer bpe_;                // the same merges in byte ids
};

// True when `dir` holds tokenizer.json, or vocab.json and merges.txt.
bool has_hugging_face_tokenizer(const std::string& dir);

// The "gpt2" tokenizer file text for the Hugging Face tokenizer files in `dir` (tokenizer.json
// preferred); nd::Error (input) naming the file when they are not a GPT-2-style byte-level BPE.
std::string gpt2_tokenizer_text_from_dir(const std::string& dir);

}  // namespace nd
