// Reading and writing .bin token files. Integers are packed byte by byte so the format is
// little-endian whatever the host.
#include "data/token_file.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd {
namespace {

void put_le(std::vector<unsigned char>& out, size_t at, uint32_t value, int width) {
  for (int b = 0; b < width; ++b) out[at + b] = static_cast<unsigned char>(value >> (8 * b));
}

uint32_t get_le(const unsigned char* in, int width) {
  uint32_t value = 0;
  for (int b = 0; b < width; ++b) value |= static_cast<uint32_t>(in[b]) << (8 * b);
  return value;
}

// The index of the first token outside [0, vocab_size), or -1.
int64_t first_out_of_vocab(const std::vector<int32_t>& tokens, int64_t vocab_size) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab_size) return static_cast<int64_t>(i);
  return -1;
}

// Tokens handed over in memory: one outside the vocabulary is a bug of the caller.
void check_tokens(const std::vector<int32_t>& tokens, int64_t vocab_size, const std::string& name) {
  const int64_t bad = first_out_of_vocab(tokens, vocab_size);
  ND_CHECK(bad < 0, name << ": token " << bad << " is " << tokens[static_cast<size_t>(bad)]
                         << ", outside the vocabulary of size " << vocab_size);
}

}  // namespace

int token_width_for_vocab(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

std::vector<unsigned char> token_file_header_bytes(int64_t vocab_size, int64_t count) {
  ND_CHECK(vocab_size > 0 && vocab_size <= std::numeric_limits<int32_t>::max(),
           "token file: vocab size " << vocab_size << " is not a positive int32");
  ND_CHECK(count >= 0 && count <= std::numeric_limits<int32_t>::max(),
           "token file: " << count << " tokens do not fit the int32 count of the header");
  std::vector<unsigned char> bytes(kTokenFileHeaderInts * 4, 0);
  put_le(bytes, 0, static_cast<uint32_t>(kTokenFileMagic), 4);
  put_le(bytes, 4, static_cast<uint32_t>(kTokenFileVersion), 4);
  put_le(bytes, 8, static_cast<uint32_t>(vocab_size), 4);
  put_le(bytes, 12, static_cast<uint32_t>(token_width_for_vocab(vocab_size)), 4);
  put_le(bytes, 16, static_cast<uint32_t>(count), 4);
  return bytes;
}

void write_token_file(const std::string& path, const std::vector<int32_t>& tokens, int64_t vocab_size) {
  ND_CHECK(vocab_size > 0 && vocab_size <= std::numeric_limits<int32_t>::max(),
           path << ": vocab size " << vocab_size << " is not a positive int32");
  ND_CHECK(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
           path << ": " << tokens.size() << " tokens do not fit the int32 count of the header");
  check_tokens(tokens, vocab_size, path);
  int width = token_width_for_vocab(vocab_size);
  size_t header_bytes = kTokenFileHeaderInts * 4;
  std::vector<unsigned char> bytes = token_file_header_bytes(vocab_size, static_cast<int64_t>(tokens.size()));
  bytes.resize(header_bytes + tokens.size() * width, 0);
  for (size_t i = 0; i < tokens.size(); ++i)
    put_le(bytes, header_bytes + i * width, static_cast<uint32_t>(tokens[i]), width);
  AtomicFileWriter writer(path);
  writer.write(bytes.data(), bytes.size());
  writer.commit();
}

TokenFile::TokenFile(std::vector<int32_t> tokens, int64_t vocab_size, std::string name)
    : path_(std::move(name)), vocab_size_(vocab_size), tokens_(std::move(tokens)) {
  ND_CHECK(vocab_size_ > 0, path_ << ": vocab size " << vocab_size_ << " must be positive");
  check_tokens(tokens_, vocab_size_, path_);
}

TokenFileHeader parse_token_file_header(const unsigned char* header, int64_t file_bytes, const std::string& path) {
  const int64_t header_bytes = kTokenFileHeaderInts * 4;
  ND_CHECK_INPUT(file_bytes >= header_bytes, path << " is " << file_bytes << " bytes, shorter than the "
                                                  << header_bytes << "-byte token-file header");
  int32_t magic = static_cast<int32_t>(get_le(&header[0], 4));
  int32_t version = static_cast<int32_t>(get_le(&header[4], 4));
  int32_t vocab_size = static_cast<int32_t>(get_le(&header[8], 4));
  int32_t width = static_cast<int32_t>(get_le(&header[12], 4));
  int32_t count = static_cast<int32_t>(get_le(&header[16], 4));
  ND_CHECK_INPUT(magic == kTokenFileMagic, path << " is not a nanodist token file (magic " << magic
                                                << ", expected " << kTokenFileMagic << ")");
  ND_CHECK_INPUT(version == kTokenFileVersion, path << ": unknown token-file version " << version
                                                    << " (this build reads version " << kTokenFileVersion << ")");
  ND_CHECK_INPUT(vocab_size > 0, path << ": vocab size " << vocab_size << " in the header must be positive");
  ND_CHECK_INPUT(width == 2 || width == 4, path << ": token width " << width << " bytes, expected 2 or 4");
  ND_CHECK_INPUT(width == token_width_for_vocab(vocab_size),
                 path << ": token width " << width << " does not match vocab size " << vocab_size);
  ND_CHECK_INPUT(count >= 0, path << ": negative token count " << count);
  int64_t expected_bytes = header_bytes + static_cast<int64_t>(count) * width;
  ND_CHECK_INPUT(file_bytes == expected_bytes,
                 path << " is " << file_bytes << " bytes but its header promises " << count << " tokens of " << width
                      << " bytes (" << expected_bytes << " bytes): truncated or corrupt");
  return {vocab_size, width, count};
}

namespace {

// The file opened at its header, which `header` receives; its length in `file_bytes`.
std::ifstream open_token_file_at_header(const std::string& path, std::vector<unsigned char>& header,
                                        int64_t& file_bytes) {
  std::error_code ec;
  ND_CHECK_INPUT(std::filesystem::is_regular_file(path, ec),
                 "cannot open token file " << path << " (missing or not a file); nanodist prepare --out DIR makes one");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  ND_CHECK_INPUT(in.good(), "cannot open token file " << path << " (missing or unreadable)");
  file_bytes = static_cast<int64_t>(in.tellg());
  const int64_t header_bytes = kTokenFileHeaderInts * 4;
  header.assign(static_cast<size_t>(header_bytes), 0);
  if (file_bytes < header_bytes) return in;  // parse_token_file_header says so
  in.seekg(0);
  in.read(reinterpret_cast<char*>(header.data()), header_bytes);
  ND_CHECK_INPUT(in.good(), "cannot read the header of " << path);
  return in;
}

}  // namespace

TokenFileHeader read_token_file_header(const std::string& path) {
  std::vector<unsigned char> header;
  int64_t file_bytes = 0;
  open_token_file_at_header(path, header, file_bytes);
  return parse_token_file_header(header.data(), file_bytes, path);
}

TokenFile TokenFile::open(const std::string& path) {
  std::vector<unsigned char> header;
  int64_t file_bytes = 0;
  std::ifstream in = open_token_file_at_header(path, header, file_bytes);
  const TokenFileHeader h = parse_token_file_header(header.data(), file_bytes, path);
  const int width = h.width;
  std::vector<unsigned char> body(static_cast<size_t>(h.count) * width);
  in.read(reinterpret_cast<char*>(body.data()), static_cast<std::streamsize>(body.size()));
  ND_CHECK_INPUT(in.good() || body.empty(), "cannot read the tokens of " << path);
  TokenFile file;
  file.path_ = path;
  file.vocab_size_ = h.vocab_size;
  file.tokens_.resize(static_cast<size_t>(h.count));
  for (size_t i = 0; i < file.tokens_.size(); ++i)
    file.tokens_[i] = static_cast<int32_t>(get_le(&body[i * width], width));
  // A file's tokens outside its own header's vocabulary are the file's fault: an input error.
  const int64_t bad = first_out_of_vocab(file.tokens_, h.vocab_size);
  ND_CHECK_INPUT(bad < 0, path << ": token " << bad << " is " << file.tokens_[static_cast<size_t>(bad)]
                               << ", outside the vocabulary of size " << h.vocab_size << " its header gives");
  return file;
}

}  // namespace nd
