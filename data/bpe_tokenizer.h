// Byte-level BPE (GPT-2 style): ids 0..255 are the bytes; merge i joins two existing ids into
// id 256 + i. Text is pre-split into chunks (pretokenize.h) and merges apply inside a chunk by
// rank, so any byte string, invalid UTF-8 and NUL included, round-trips exactly.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer.h"

namespace nd {

// The most bytes all tokens of a vocabulary may spell out together: 64 MiB, over 100 times
// GPT-2's 50257 tokens, so a file whose merges keep doubling one token is refused cheaply.
constexpr int64_t kMaxBpeVocabularyBytes = int64_t{1} << 26;

struct BpeMerge {
  int32_t left;
  int32_t right;
};

class BpeTokenizer : public Tokenizer {
 public:
  // Learns up to vocab_size - 256 merges from `text` (fewer when no pair is left to merge):
  // repeatedly merges the most frequent adjacent pair over the multiset of chunks, ties broken
  // by the smaller (left, right). nd::Error on an empty text or vocab_size < 256.
  // Defined in bpe_train.cpp.
  static BpeTokenizer train(const std::string& text, int64_t vocab_size, const ProgressFn& progress = {});
  // Merge i must join ids below 256 + i, each pair once, the tokens within kMaxBpeVocabularyBytes
  // (nd::Error, input, otherwise).
  explicit BpeTokenizer(std::vector<BpeMerge> merges);
  // Parses the contents of a file written by save(); `path` names it in errors.
  static BpeTokenizer parse(const std::string& file_text, const std::string& path);

  std::string kind() const override { return "bpe"; }
  int32_t vocab_size() const override { return static_cast<int32_t>(token_bytes_.size()); }
  using Tokenizer::encode;
  std::vector<int32_t> encode(const std::string& text, const ProgressFn& progress) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(const std::string& path) const override;

  const std::vector<BpeMerge>& merges() const { return merges_; }
  const std::string& token_bytes(int32_t id) const { return token_bytes_.at(static_cast<size_t>(id)); }
  // The ids of one pre-split chunk after applying every merge by rank.
  std::vector<int32_t> encode_chunk(std::string_view chunk) const;

 private:
  std::vector<BpeMerge> merges_;
  std::vector<std::string> token_bytes_;             // id -> the bytes it stands for
  std::unordered_map<uint64_t, int32_t> rank_of_pair_;  // pair_key(left, right) -> merge index
};

// (left, right) packed into one key; ordering keys orders pairs by left, then right.
inline uint64_t bpe_pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace nd
