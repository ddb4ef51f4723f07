// prepare with random tokens: files of the asked sizes and vocabulary, ids spread uniformly over
// the whole range (counts within a few binomial standard deviations), reproducible per seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/prepare.h"
#include "data/token_file.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

PrepareOptions random_options(const std::string& out, int64_t n, int64_t vocab, uint64_t seed = 1337) {
  PrepareOptions o;
  o.out_dir = out;
  o.random_tokens = n;
  o.vocab_size = vocab;
  o.seed = seed;
  return o;
}

TEST(RandomPrepare, WritesFilesOfTheAskedSizesAndVocabulary) {
  TempDir dir;
  PrepareStats s = prepare(random_options(dir.file("r"), 2000, 7));
  EXPECT_EQ(s.train_tokens, 2000);
  EXPECT_EQ(s.val_tokens, 200);
  EXPECT_EQ(s.tokens, 2200);
  EXPECT_EQ(s.vocab_size, 7);
  TokenFile train = TokenFile::open(s.train_path), val = TokenFile::open(s.val_path);
  EXPECT_EQ(train.size(), 2000);
  EXPECT_EQ(val.size(), 200);
  EXPECT_EQ(train.vocab_size(), 7);
  EXPECT_EQ(val.vocab_size(), 7);
  // header of 256 int32, then u16 tokens
  EXPECT_EQ(std::filesystem::file_size(s.train_path), 256u * 4u + 2000u * 2u);
  std::unique_ptr<Tokenizer> tok = Tokenizer::load(s.tokenizer_path);
  EXPECT_EQ(tok->kind(), "ids");
  EXPECT_EQ(tok->vocab_size(), 7);
  EXPECT_EQ(tok->encode(tok->decode(train.tokens())), train.tokens());
}

TEST(RandomPrepare, IdsAreUniformOverTheWholeVocabulary) {
  TempDir dir;
  const int64_t n = 70000, vocab = 7;
  TokenFile train = TokenFile::open(prepare(random_options(dir.file("r"), n, vocab)).train_path);
  std::vector<int64_t> counts(vocab, 0);
  for (int32_t id : train.tokens()) ++counts[static_cast<size_t>(id)];
  const double p = 1.0 / vocab, mean = n * p, sd = std::sqrt(n * p * (1 - p));
  for (int64_t id = 0; id < vocab; ++id) EXPECT_LT(std::fabs(counts[id] - mean), 5 * sd) << "id " << id;
}

TEST(RandomPrepare, Gpt2VocabularyIsCoveredToBothEnds) {
  TempDir dir;
  const int64_t vocab = 50257;
  TokenFile train = TokenFile::open(prepare(random_options(dir.file("r"), 200000, vocab)).train_path);
  EXPECT_EQ(train.token_width(), 2);
  auto [lo, hi] = std::minmax_element(train.tokens().begin(), train.tokens().end());
  // P(no id below 100) = (1 - 100/V)^200000 ~ e^-398: the ends are reached unless ids are skewed.
  EXPECT_GE(*lo, 0);
  EXPECT_LT(*lo, 100);
  EXPECT_LT(*hi, vocab);
  EXPECT_GE(*hi, vocab - 100);
}

TEST(RandomPrepare, SameSeedSameTokensOtherSeedOtherTokens) {
  TempDir dir;
  auto tokens = [&](const std::string& name, uint64_t seed, const char* file) {
    prepare(random_options(dir.file(name), 1000, 50257, seed));
    return TokenFile::open(dir.file(name + "/" + file)).tokens();
  };
  std::vector<int32_t> a = tokens("a", 1, "train.bin"), b = tokens("b", 1, "train.bin");
  std::vector<int32_t> c = tokens("c", 2, "train.bin");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // val draws from counters after train's, so it does not repeat train's first tokens
  std::vector<int32_t> val = tokens("a", 1, "val.bin");
  EXPECT_NE(val, std::vector<int32_t>(a.begin(), a.begin() + 100));
}

TEST(RandomPrepare, BadOptionsAreErrors) {
  TempDir dir;
  EXPECT_THROW(prepare(random_options(dir.file("r"), 1000, 0)), Error);
  EXPECT_THROW(prepare(random_options(dir.file("r"), 9, 5)), Error);
  EXPECT_THROW(prepare(random_options("", 1000, 5)), Error);
  PrepareOptions with_input = random_options(dir.file("r"), 1000, 5);
  with_input.inputs = {dir.file("in.txt")};
  EXPECT_THROW(prepare(with_input), Error);
}

}  // namespace
}  // namespace nd
