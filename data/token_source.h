// A token stream made of one or more shards of little-endian u16 or u32 tokens (the files of a
// dataset, read in order as one stream), kept at their width on disk and widened to i32 only when
// a window is copied out. Shards are memory-mapped files or an in-memory TokenFile.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/token_file.h"

namespace nd {

struct TokenShard {
  std::string name;                   // the file it comes from; errors name it
  std::shared_ptr<const void> owner;  // keeps `bytes` alive (a MappedFile, a TokenFile)
  const unsigned char* bytes = nullptr;  // the first token
  int width = 2;                      // bytes per token: 2 or 4
  int64_t count = 0;                  // tokens
};

// One of our token files (token_file.h) mapped as a shard, its header checked; `vocab_size`
// receives the vocabulary it records. Its ids are checked by TokenSource.
TokenShard map_token_file(const std::string& path, int64_t* vocab_size);

class TokenSource {
 public:
  // Reads every token once: nd::Error naming the shard and position of the first token outside
  // [0, vocab_size), on an empty shard list, or a width other than 2 or 4.
  TokenSource(std::vector<TokenShard> shards, int64_t vocab_size);
  // One of our token files as a one-shard stream (its tokens were checked when it was opened).
  static std::shared_ptr<const TokenSource> of(std::shared_ptr<const TokenFile> file);

  int64_t size() const { return starts_.back(); }
  int64_t vocab_size() const { return vocab_size_; }
  // The first shard's name, with "(+N more shards)" when there are several.
  std::string name() const;
  const std::vector<TokenShard>& shards() const { return shards_; }

  int32_t operator[](int64_t i) const;
  // out[k] = token start + k for k in [0, count); a window may span two shards.
  void copy(int64_t start, int64_t count, int32_t* out) const;

 private:
  struct Checked {};
  TokenSource(std::vector<TokenShard> shards, int64_t vocab_size, Checked);
  size_t shard_of(int64_t i) const;  // the shard holding token i

  std::vector<TokenShard> shards_;
  std::vector<int64_t> starts_;  // starts_[s] = index of shard s's first token; back() = total
  int64_t vocab_size_ = 0;
};

}  // namespace nd
