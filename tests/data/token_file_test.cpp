// .bin token files: round trips at both widths, the byte layout, and every validation failure.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>

#include "data/token_file.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

// Expects nd::Error whose message contains `needle`.
template <typename F>
void expect_error_containing(F&& f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected nd::Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

uint32_t read_le32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + b])) << (8 * b);
  return v;
}

void put_le32(std::string& bytes, size_t at, uint32_t v) {
  for (int b = 0; b < 4; ++b) bytes[at + b] = static_cast<char>(v >> (8 * b));
}

TEST(TokenFile, RoundTripU16) {
  TempDir dir;
  std::vector<int32_t> tokens = {0, 1, 64, 65535, 300, 7};
  write_token_file(dir.file("a.bin"), tokens, 65536);
  TokenFile f = TokenFile::open(dir.file("a.bin"));
  EXPECT_EQ(f.vocab_size(), 65536);
  EXPECT_EQ(f.token_width(), 2);
  EXPECT_EQ(f.size(), 6);
  EXPECT_EQ(f.tokens(), tokens);
  EXPECT_EQ(f[3], 65535);
  // Layout: 1024-byte header, then 2 bytes per token, little-endian.
  std::string bytes = read_bytes(dir.file("a.bin"));
  ASSERT_EQ(bytes.size(), 1024u + 6 * 2);
  EXPECT_EQ(std::memcmp(bytes.data(), "NDTK", 4), 0);
  EXPECT_EQ(read_le32(bytes, 4), 1u);
  EXPECT_EQ(read_le32(bytes, 8), 65536u);
  EXPECT_EQ(read_le32(bytes, 12), 2u);
  EXPECT_EQ(read_le32(bytes, 16), 6u);
  for (size_t i = 20; i < 1024; ++i) EXPECT_EQ(bytes[i], 0) << "header byte " << i;
  EXPECT_EQ(static_cast<unsigned char>(bytes[1024 + 2 * 2]), 64);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1024 + 2 * 4]), 300 & 0xff);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1024 + 2 * 4 + 1]), 300 >> 8);
  EXPECT_FALSE(std::filesystem::exists(dir.file(".a.bin.tmp." + std::to_string(::getpid()))));
}

TEST(TokenFile, RoundTripI32) {
  TempDir dir;
  std::vector<int32_t> tokens = {0, 65536, 70000, 123456, 5};
  write_token_file(dir.file("b.bin"), tokens, 200000);
  TokenFile f = TokenFile::open(dir.file("b.bin"));
  EXPECT_EQ(f.token_width(), 4);
  EXPECT_EQ(f.vocab_size(), 200000);
  EXPECT_EQ(f.tokens(), tokens);
  EXPECT_EQ(read_bytes(dir.file("b.bin")).size(), 1024u + 5 * 4);
}

TEST(TokenFile, EmptyStreamRoundTrips) {
  TempDir dir;
  write_token_file(dir.file("e.bin"), {}, 65);
  EXPECT_EQ(TokenFile::open(dir.file("e.bin")).size(), 0);
}

TEST(TokenFile, WriterRejectsTokensOutsideVocab) {
  TempDir dir;
  expect_error_containing([&] { write_token_file(dir.file("c.bin"), {1, 65}, 65); }, "65");
  expect_error_containing([&] { write_token_file(dir.file("c.bin"), {-1}, 65); }, "-1");
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.bin")));
}

TEST(TokenFile, ReaderRejectsCorruptFiles) {
  TempDir dir;
  write_token_file(dir.file("good.bin"), {1, 2, 3, 4}, 10);
  std::string good = read_bytes(dir.file("good.bin"));

  expect_error_containing([&] { TokenFile::open(dir.file("missing.bin")); }, "missing.bin");
  expect_error_containing([&] { TokenFile::open(dir.path.string()); }, dir.path.string());

  write_bytes(dir.file("short.bin"), good.substr(0, 100));
  expect_error_containing([&] { TokenFile::open(dir.file("short.bin")); }, "short.bin");

  std::string bad_magic = good;
  put_le32(bad_magic, 0, 12345);
  write_bytes(dir.file("magic.bin"), bad_magic);
  expect_error_containing([&] { TokenFile::open(dir.file("magic.bin")); }, "magic");

  std::string bad_version = good;
  put_le32(bad_version, 4, 2);
  write_bytes(dir.file("version.bin"), bad_version);
  expect_error_containing([&] { TokenFile::open(dir.file("version.bin")); }, "version 2");

  std::string bad_width = good;
  put_le32(bad_width, 12, 3);
  write_bytes(dir.file("width.bin"), bad_width);
  expect_error_containing([&] { TokenFile::open(dir.file("width.bin")); }, "width 3");

  write_bytes(dir.file("truncated.bin"), good.substr(0, good.size() - 1));
  expect_error_containing([&] { TokenFile::open(dir.file("truncated.bin")); }, "truncated");

  write_bytes(dir.file("long.bin"), good + "xx");
  expect_error_containing([&] { TokenFile::open(dir.file("long.bin")); }, "long.bin");

  std::string bad_count = good;
  put_le32(bad_count, 16, 5);
  write_bytes(dir.file("count.bin"), bad_count);
  expect_error_containing([&] { TokenFile::open(dir.file("count.bin")); }, "5 tokens");

  std::string bad_token = good;
  bad_token[1024 + 2 * 2] = 10;  // token 2 becomes 10 in a vocabulary of 10
  write_bytes(dir.file("vocab.bin"), bad_token);
  expect_error_containing([&] { TokenFile::open(dir.file("vocab.bin")); }, "outside the vocabulary");

  std::string zero_vocab = good;
  put_le32(zero_vocab, 8, 0);
  write_bytes(dir.file("zero.bin"), zero_vocab);
  EXPECT_THROW(TokenFile::open(dir.file("zero.bin")), Error);
}

TEST(TokenFile, InMemoryStreamIsChecked) {
  TokenFile ok({0, 1, 2}, 3);
  EXPECT_EQ(ok.size(), 3);
  EXPECT_THROW(TokenFile({0, 3}, 3), Error);
}

}  // namespace
}  // namespace nd
