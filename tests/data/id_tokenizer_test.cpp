// Id tokenizer: decimal ids round-trip, anything else or an id outside the vocabulary is an
// error naming it, and its file loads back through the one tokenizer factory.
#include <gtest/gtest.h>

#include "data/atomic_file.h"
#include "data/id_tokenizer.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(IdTokenizer, IdsRoundTripThroughText) {
  IdTokenizer tok(50);
  std::vector<int32_t> ids = {0, 5, 49, 12, 12, 7};
  EXPECT_EQ(tok.decode(ids), "0 5 49 12 12 7");
  EXPECT_EQ(tok.encode(tok.decode(ids)), ids);
  EXPECT_EQ(tok.encode("  3\n 7\t0 \r\n"), (std::vector<int32_t>{3, 7, 0}));
  EXPECT_EQ(tok.encode("049"), (std::vector<int32_t>{49}));
  EXPECT_TRUE(tok.encode("").empty());
  EXPECT_EQ(tok.decode({}), "");
  EXPECT_EQ(tok.kind(), "ids");
  EXPECT_EQ(tok.vocab_size(), 50);
}

TEST(IdTokenizer, WordsThatAreNotIdsAndIdsOutsideTheVocabularyAreErrors) {
  IdTokenizer tok(50);
  std::string e = error_of([&] { tok.encode("3 50"); });
  EXPECT_NE(e.find("token id 50 at offset 2"), std::string::npos) << e;
  e = error_of([&] { tok.encode("1 x2"); });
  EXPECT_NE(e.find("\"x2\" at offset 2"), std::string::npos) << e;
  for (const char* bad : {"-1", "+1", "1.5", "1e3", "99999999999999999999", "3,4"})
    EXPECT_THROW(tok.encode(bad), Error) << bad;
  EXPECT_THROW(tok.decode({50}), Error);
  EXPECT_THROW(tok.decode({-1}), Error);
  EXPECT_THROW(IdTokenizer(0), Error);
  EXPECT_THROW(IdTokenizer(-3), Error);
}

TEST(IdTokenizer, FileLoadsBackThroughTheFactory) {
  TempDir dir;
  IdTokenizer(50257).save(dir.file("tokenizer.txt"));
  std::unique_ptr<Tokenizer> loaded = Tokenizer::load(dir.file("tokenizer.txt"));
  EXPECT_EQ(loaded->kind(), "ids");
  EXPECT_EQ(loaded->vocab_size(), 50257);
  EXPECT_EQ(loaded->decode(loaded->encode("50256 0 17")), "50256 0 17");
  std::unique_ptr<Tokenizer> from_text = Tokenizer::from_text(read_whole_file(dir.file("tokenizer.txt")), "memory");
  EXPECT_EQ(from_text->vocab_size(), 50257);
}

TEST(IdTokenizer, MalformedFilesAreErrorsNamingTheSource) {
  for (const char* text : {"nanodist-tokenizer ids\n", "nanodist-tokenizer ids\nvocab_size 0\n",
                           "nanodist-tokenizer ids\nvocab_size 5 extra\n", "nanodist-tokenizer ids\nvocab 5\n",
                           "nanodist-tokenizer ids\nvocab_size 5\nvocab_size 6\n"}) {
    std::string e = error_of([&] { Tokenizer::from_text(text, "bad.txt"); });
    EXPECT_NE(e.find("bad.txt"), std::string::npos) << text << " -> " << e;
  }
  std::string e = error_of([] { Tokenizer::from_text("nanodist-tokenizer words\n", "x.txt"); });
  EXPECT_NE(e.find("expected char, bpe, ids or gpt2"), std::string::npos) << e;
}

}  // namespace
}  // namespace nd
