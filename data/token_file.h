// Token files (.bin): a header of 256 little-endian int32 (magic, version, vocab size, token
// width in bytes, token count, then zeros) followed by the tokens, little-endian, u16 when the
// vocabulary fits in 16 bits and i32 otherwise. Validated completely on open.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nd {

constexpr int kTokenFileHeaderInts = 256;
constexpr int32_t kTokenFileMagic = 0x4B54444E;  // the bytes "NDTK" on disk
constexpr int32_t kTokenFileVersion = 1;

// 2 when every id of a `vocab_size` vocabulary fits in a u16, else 4.
int token_width_for_vocab(int64_t vocab_size);

// Writes atomically (temporary name, fsync, rename). Every token must lie in [0, vocab_size).
void write_token_file(const std::string& path, const std::vector<int32_t>& tokens, int64_t vocab_size);

// What a token file's header says, validated against the file's length (magic, version, vocab,
// width, count); nd::Error naming the file on anything TokenFile::open would refuse but the ids.
struct TokenFileHeader {
  int64_t vocab_size = 0;
  int width = 2;
  int64_t count = 0;
};
// The kTokenFileHeaderInts * 4 header bytes of a file of `count` tokens.
std::vector<unsigned char> token_file_header_bytes(int64_t vocab_size, int64_t count);
TokenFileHeader parse_token_file_header(const unsigned char* header, int64_t file_bytes, const std::string& path);
TokenFileHeader read_token_file_header(const std::string& path);

class TokenFile {
 public:
  // Reads and validates the whole file; nd::Error naming the file on a missing file, a short
  // header, wrong magic, unknown version, bad width, wrong size for the count, or a token id
  // outside the vocabulary.
  static TokenFile open(const std::string& path);
  // An in-memory token stream (tests, or a loader over freshly encoded text); same checks.
  TokenFile(std::vector<int32_t> tokens, int64_t vocab_size, std::string name = "<memory>");

  const std::string& path() const { return path_; }
  int64_t vocab_size() const { return vocab_size_; }
  int token_width() const { return token_width_for_vocab(vocab_size_); }
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  int32_t operator[](int64_t i) const { return tokens_[static_cast<size_t>(i)]; }
  const int32_t* data() const { return tokens_.data(); }
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  TokenFile() = default;
  std::string path_;
  int64_t vocab_size_ = 0;
  std::vector<int32_t> tokens_;
};

}  // namespace nd
