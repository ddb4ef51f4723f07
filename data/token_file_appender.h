// A token file (token_file.h's format) written as a stream, for corpora larger than memory:
// tokens are appended in batches, synced on demand so a crash keeps what was synced, and the
// header's count is written when the file is closed. Reopening at a known count cuts off what
// came after it, so an interrupted job goes on from its last sync.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nd {

class TokenFileAppender {
 public:
  // A new, empty file at `path` (replacing one there); with keep >= 0 the existing file is kept
  // up to its first `keep` tokens instead. nd::Error naming the file when it cannot be opened or
  // is shorter than `keep` tokens.
  TokenFileAppender(std::string path, int64_t vocab_size, int64_t keep = -1);
  ~TokenFileAppender();  // closes without writing the count unless close() ran
  TokenFileAppender(const TokenFileAppender&) = delete;
  TokenFileAppender& operator=(const TokenFileAppender&) = delete;

  // Tokens must lie in [0, vocab_size) (nd::Error otherwise; nothing of the batch is written).
  void append(const int32_t* tokens, int64_t n);
  void sync();   // what was appended is on disk
  void close();  // writes the header with the count, syncs, closes
  int64_t count() const { return count_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int64_t vocab_size_;
  int width_;
  int fd_ = -1;
  int64_t count_ = 0;
  std::vector<unsigned char> bytes_;  // one batch in the file's width
};

// Tokens [begin, end) of the closed token file `from` copied into a new token file `to`
// (written atomically), a block at a time.
void copy_token_range(const std::string& from, int64_t begin, int64_t end, const std::string& to);

// Cuts the token file `path` to its first `count` tokens and writes that count into its header;
// done again after a crash in between, it finishes the job.
void truncate_token_file(const std::string& path, int64_t vocab_size, int64_t count);

}  // namespace nd
