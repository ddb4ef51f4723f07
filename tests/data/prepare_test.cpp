// prepare(): files that load and decode back to the input, option validation, clean errors,
// and the real corpora where this machine has them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "data/corpus.h"
#include "data/prepare.h"
#include "data/token_file.h"
#include "tensor/error.h"
#include "tests/common/scoped_env.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

std::string small_text() {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "Line " + std::to_string(i) + ": the cat sat on the mat; it's a cat's life.\n";
  return text;
}

// Decodes train.bin followed by val.bin with the saved tokenizer.
std::string decode_split(const PrepareStats& stats) {
  TokenFile train = TokenFile::open(stats.train_path), val = TokenFile::open(stats.val_path);
  std::unique_ptr<Tokenizer> tok = Tokenizer::load(stats.tokenizer_path);
  EXPECT_EQ(train.vocab_size(), tok->vocab_size());
  EXPECT_EQ(val.vocab_size(), tok->vocab_size());
  std::vector<int32_t> all = train.tokens();
  all.insert(all.end(), val.tokens().begin(), val.tokens().end());
  return tok->decode(all);
}

TEST(Prepare, CharFilesLoadAndDecodeBackToTheText) {
  TempDir dir;
  std::string text = small_text();
  write_bytes(dir.file("in.txt"), text);
  PrepareOptions o;
  o.inputs = {dir.file("in.txt")};
  o.out_dir = dir.file("out/nested");
  o.val_fraction = 0.25;
  PrepareStats s = prepare(o);
  EXPECT_EQ(s.chars, static_cast<int64_t>(text.size()));
  EXPECT_EQ(s.tokens, s.chars);
  EXPECT_DOUBLE_EQ(s.chars_per_token, 1.0);
  EXPECT_EQ(s.val_tokens, static_cast<int64_t>(std::llround(text.size() * 0.25)));
  EXPECT_EQ(s.train_tokens + s.val_tokens, s.tokens);
  EXPECT_EQ(TokenFile::open(s.val_path).size(), s.val_tokens);
  EXPECT_EQ(decode_split(s), text);
}

TEST(Prepare, BpeFilesLoadAndDecodeBackAndCompress) {
  TempDir dir;
  std::string text = small_text();
  write_bytes(dir.file("a.txt"), text.substr(0, 1000));
  write_bytes(dir.file("b.txt"), text.substr(1000));
  PrepareOptions o;
  o.inputs = {dir.file("a.txt"), dir.file("b.txt")};
  o.out_dir = dir.file("out");
  o.tokenizer = "bpe";
  o.vocab_size = 300;
  double last = -1;
  o.progress = [&](double f) {
    EXPECT_GE(f, last);
    last = f;
  };
  PrepareStats s = prepare(o);
  EXPECT_DOUBLE_EQ(last, 1.0);
  EXPECT_EQ(s.vocab_size, 300);
  EXPECT_GT(s.chars_per_token, 2.0);
  EXPECT_EQ(decode_split(s), text);
}

TEST(Prepare, InvalidOptionsAreErrors) {
  TempDir dir;
  write_bytes(dir.file("in.txt"), small_text());
  write_bytes(dir.file("empty.txt"), "");
  PrepareOptions o;
  o.inputs = {dir.file("in.txt")};
  o.out_dir = dir.file("out");
  auto with = [&](auto change) {
    PrepareOptions copy = o;
    change(copy);
    return copy;
  };
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.val_fraction = 0.0; })), Error);
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.val_fraction = 1.0; })), Error);
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.val_fraction = -0.5; })), Error);
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.tokenizer = "word"; })), Error);
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.tokenizer = "bpe", p.vocab_size = 100; })), Error);
  EXPECT_THROW(prepare(with([&](PrepareOptions& p) { p.inputs = {dir.file("empty.txt")}; })), Error);
  EXPECT_THROW(prepare(with([&](PrepareOptions& p) { p.inputs = {dir.file("missing.txt")}; })), Error);
  std::filesystem::create_directories(dir.file("no_text"));  // a directory is read for its files: none here
  EXPECT_THROW(prepare(with([&](PrepareOptions& p) { p.inputs = {dir.file("no_text")}; })), Error);
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.out_dir = ""; })), Error);
  EXPECT_THROW(prepare(with([](PrepareOptions& p) { p.inputs.clear(), p.corpus = "nope"; })), Error);
  // Too short to give both splits a token.
  write_bytes(dir.file("tiny.txt"), "ab");
  EXPECT_THROW(prepare(with([&](PrepareOptions& p) { p.inputs = {dir.file("tiny.txt")}; })), Error);
}

TEST(Prepare, UnwritableOutputDirIsAnError) {
  TempDir dir;
  write_bytes(dir.file("in.txt"), small_text());
  write_bytes(dir.file("a_file"), "x");
  PrepareOptions o;
  o.inputs = {dir.file("in.txt")};
  o.out_dir = dir.file("a_file") + "/sub";  // below a regular file: cannot be created
  try {
    prepare(o);
    FAIL() << "an output dir below a file must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a_file"), std::string::npos) << e.what();
  }
}

TEST(Prepare, MissingBibleProgramSaysWhatToInstall) {
  TempDir dir;
  test::ScopedEnv path("PATH", dir.path.string());
  try {
    read_named_corpus("kjv");
    ADD_FAILURE() << "kjv without `bible` must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bible-kjv"), std::string::npos) << e.what();
  }
}

TEST(Prepare, TinyShakespeareCharVocabIs65) {
  std::string path = std::string(ND_SHARED_DATA_DIR) + "/tinyshakespeare.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  TempDir dir;
  PrepareOptions o;
  o.inputs = {path};
  o.out_dir = dir.file("shakespeare_char");
  PrepareStats s = prepare(o);
  EXPECT_EQ(s.vocab_size, 65);
  EXPECT_EQ(s.chars, 1115394);
  EXPECT_EQ(s.val_tokens, 111539);  // round(0.1 * 1115394)
  EXPECT_EQ(TokenFile::open(s.train_path).size(), 1115394 - 111539);
}

TEST(Prepare, KingJamesBibleFromBibleKjv) {
  if (std::system("command -v bible >/dev/null 2>&1") != 0) GTEST_SKIP() << "bible-kjv is not installed";
  std::string text = read_named_corpus("kjv");
  EXPECT_EQ(text.rfind("Ge1:1 In the beginning God created the heaven and the earth.\n", 0), 0u);
  EXPECT_NE(text.find("Rev22:21 The grace of our Lord Jesus Christ be with you all. Amen."), std::string::npos);
  EXPECT_GT(text.size(), 4000000u);
}

}  // namespace
}  // namespace nd
