// Char tokenizer: sorted byte vocabulary, exact round trips, errors on unseen bytes, file I/O.
#include <gtest/gtest.h>

#include "data/char_tokenizer.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

TEST(CharTokenizer, VocabularyIsTheSortedSetOfBytes) {
  CharTokenizer tok = CharTokenizer::train("hello world\n");
  std::vector<unsigned char> expected = {'\n', ' ', 'd', 'e', 'h', 'l', 'o', 'r', 'w'};
  EXPECT_EQ(tok.symbols(), expected);
  EXPECT_EQ(tok.vocab_size(), 9);
  // id = rank of the byte in the sorted set
  EXPECT_EQ(tok.encode("hello"), (std::vector<int32_t>{4, 3, 5, 5, 6}));
}

TEST(CharTokenizer, RoundTripsEveryByte) {
  std::string text;
  for (int b = 255; b >= 0; --b) text.push_back(static_cast<char>(b));
  text += std::string("\0\xff abc", 6);
  CharTokenizer tok = CharTokenizer::train(text);
  EXPECT_EQ(tok.vocab_size(), 256);
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
}

TEST(CharTokenizer, UnseenByteAndBadIdAreErrors) {
  CharTokenizer tok = CharTokenizer::train("abc");
  try {
    tok.encode("abz");
    FAIL() << "an unseen byte must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"z\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("offset 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tok.decode({0, 3}), Error);
  EXPECT_THROW(tok.decode({-1}), Error);
  EXPECT_THROW(CharTokenizer::train(""), Error);
}

TEST(CharTokenizer, SaveLoadGivesTheSameTokenizer) {
  TempDir dir;
  std::string text = std::string("To be, or not to be:\n\t\"that\" is \\ the \x01\x80 question\0", 44);
  CharTokenizer tok = CharTokenizer::train(text);
  tok.save(dir.file("tok.txt"));
  std::string file = read_bytes(dir.file("tok.txt"));
  EXPECT_EQ(file.rfind("nanodist-tokenizer char\n", 0), 0u) << file;
  std::unique_ptr<Tokenizer> loaded = Tokenizer::load(dir.file("tok.txt"));
  EXPECT_EQ(loaded->kind(), "char");
  EXPECT_EQ(loaded->vocab_size(), tok.vocab_size());
  EXPECT_EQ(loaded->encode(text), tok.encode(text));
  EXPECT_EQ(loaded->decode(tok.encode(text)), text);
}

TEST(CharTokenizer, CorruptFilesAreErrors) {
  TempDir dir;
  write_bytes(dir.file("a.txt"), "nanodist-tokenizer char\nvocab_size 3\n0 97\n1 98\n");
  EXPECT_THROW(Tokenizer::load(dir.file("a.txt")), Error);  // 2 symbols, promised 3
  write_bytes(dir.file("b.txt"), "nanodist-tokenizer char\nvocab_size 2\n0 98\n1 97\n");
  EXPECT_THROW(Tokenizer::load(dir.file("b.txt")), Error);  // not increasing
  write_bytes(dir.file("c.txt"), "nanodist-tokenizer word\n");
  EXPECT_THROW(Tokenizer::load(dir.file("c.txt")), Error);  // unknown kind
  write_bytes(dir.file("d.txt"), "hello\n");
  EXPECT_THROW(Tokenizer::load(dir.file("d.txt")), Error);  // not a tokenizer file
  EXPECT_THROW(Tokenizer::load(dir.file("missing.txt")), Error);
}

}  // namespace
}  // namespace nd
