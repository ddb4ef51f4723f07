// Byte-level BPE: training against a naive reference trainer, encoding against naive
// merge-by-merge application, byte-exact round trips, determinism and the file format.
#include <gtest/gtest.h>

#include <map>

#include "data/bpe_tokenizer.h"
#include "data/pretokenize.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

std::string sample_text() {
  const char* lines[] = {"The quick brown fox jumps over the lazy dog. ",
                         "It's the dog's day; they're sure we'll see them there.\n",
                         "Then the other fox ran to the river, and the river ran to the sea.\n",
                         "1234 5678 the theme thesis there these those, 42!\n"};
  std::string text;
  for (int r = 0; r < 6; ++r)
    for (const char* l : lines) text += l;
  return text;
}

void merge_everywhere(std::vector<int32_t>& s, BpeMerge m, int32_t id) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i + 1 < s.size() && s[i] == m.left && s[i + 1] == m.right) {
      out.push_back(id);
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  s = out;
}

// Reference trainer: recount every pair over every chunk occurrence before each merge.
std::vector<BpeMerge> naive_train(const std::string& text, int merges_wanted) {
  std::vector<std::vector<int32_t>> chunks;
  for (std::string_view c : split_into_chunks(text)) chunks.emplace_back(c.begin(), c.end());
  for (auto& c : chunks)
    for (auto& v : c) v &= 0xff;
  std::vector<BpeMerge> merges;
  for (int k = 0; k < merges_wanted; ++k) {
    std::map<std::pair<int32_t, int32_t>, int64_t> counts;
    for (const auto& c : chunks)
      for (size_t i = 0; i + 1 < c.size(); ++i) ++counts[{c[i], c[i + 1]}];
    if (counts.empty()) break;
    auto best = counts.begin();  // std::map order = smallest (left, right) wins ties
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second > best->second) best = it;
    BpeMerge m{best->first.first, best->first.second};
    for (auto& c : chunks) merge_everywhere(c, m, 256 + k);
    merges.push_back(m);
  }
  return merges;
}

// Reference encoder: apply the merges one by one, in order, to each chunk.
std::vector<int32_t> naive_encode(const std::string& text, const std::vector<BpeMerge>& merges) {
  std::vector<int32_t> ids;
  for (std::string_view c : split_into_chunks(text)) {
    std::vector<int32_t> s;
    for (char ch : c) s.push_back(static_cast<unsigned char>(ch));
    for (size_t k = 0; k < merges.size(); ++k) merge_everywhere(s, merges[k], static_cast<int32_t>(256 + k));
    ids.insert(ids.end(), s.begin(), s.end());
  }
  return ids;
}

std::string random_bytes(size_t n, uint32_t seed) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    s.push_back(static_cast<char>(seed >> 24));
  }
  return s;
}

TEST(BpeTokenizer, TrainingMatchesTheNaiveReference) {
  std::string text = sample_text();
  BpeTokenizer tok = BpeTokenizer::train(text, 256 + 60);
  std::vector<BpeMerge> expected = naive_train(text, 60);
  ASSERT_EQ(tok.merges().size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(tok.merges()[k].left, expected[k].left) << "merge " << k;
    EXPECT_EQ(tok.merges()[k].right, expected[k].right) << "merge " << k;
  }
  EXPECT_EQ(tok.vocab_size(), 316);
}

TEST(BpeTokenizer, EncodingMatchesMergeByMergeApplication) {
  BpeTokenizer tok = BpeTokenizer::train(sample_text(), 256 + 80);
  std::string unseen = "Those foxes' theses: 'the' rivers thereof... aaaa bbbbbb the-the\n\n  x";
  EXPECT_EQ(tok.encode(sample_text()), naive_encode(sample_text(), tok.merges()));
  EXPECT_EQ(tok.encode(unseen), naive_encode(unseen, tok.merges()));
}

TEST(BpeTokenizer, RepeatedSymbolsMergeLeftToRight) {
  // merge 256 = (a, a); "aaa" -> [256, a], "aaaa" -> [256, 256]; merge 257 = (256, a).
  BpeTokenizer tok({{'a', 'a'}, {256, 'a'}});
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok.encode("aaaa"), (std::vector<int32_t>{256, 256}));
  EXPECT_EQ(tok.encode("aaaaa"), (std::vector<int32_t>{256, 257}));
  EXPECT_EQ(tok.token_bytes(257), "aaa");
}

TEST(BpeTokenizer, CompressesItsTrainingText) {
  std::string text = sample_text();
  BpeTokenizer tok = BpeTokenizer::train(text, 256 + 100);
  std::vector<int32_t> ids = tok.encode(text);
  EXPECT_LT(ids.size() * 2, text.size()) << ids.size() << " tokens for " << text.size() << " bytes";
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(BpeTokenizer, RoundTripsArbitraryBytes) {
  BpeTokenizer tok = BpeTokenizer::train(sample_text() + random_bytes(2000, 7), 256 + 100);
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::string bytes = random_bytes(3000, seed);  // invalid UTF-8, NULs, long whitespace runs
    bytes += std::string("\0\0 \xc3\x28 \xed\xa0\x80 \xf0\x9f\x98\x80  \n\n\t", 22);
    EXPECT_EQ(tok.decode(tok.encode(bytes)), bytes) << "seed " << seed;
  }
  EXPECT_TRUE(tok.encode("").empty());
  EXPECT_EQ(tok.decode({}), "");
}

TEST(BpeTokenizer, TrainingIsDeterministic) {
  std::string text = sample_text() + random_bytes(500, 3);
  BpeTokenizer a = BpeTokenizer::train(text, 400);
  BpeTokenizer b = BpeTokenizer::train(text, 400);
  ASSERT_EQ(a.merges().size(), b.merges().size());
  for (size_t k = 0; k < a.merges().size(); ++k) {
    EXPECT_EQ(a.merges()[k].left, b.merges()[k].left);
    EXPECT_EQ(a.merges()[k].right, b.merges()[k].right);
  }
}

TEST(BpeTokenizer, StopsWhenNothingIsLeftToMerge) {
  BpeTokenizer tok = BpeTokenizer::train("ab ab", 1000);
  // Chunks "ab", " ab": merges (a,b), then (' ', ab); nothing else is adjacent.
  EXPECT_EQ(tok.vocab_size(), 258);
  EXPECT_EQ(tok.encode("ab ab"), (std::vector<int32_t>{256, 257}));
}

TEST(BpeTokenizer, ProgressReachesOne) {
  std::vector<double> seen;
  BpeTokenizer::train(sample_text(), 300, [&](double f) { seen.push_back(f); });
  ASSERT_FALSE(seen.empty());
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LE(seen[i - 1], seen[i]);
}

TEST(BpeTokenizer, SaveLoadGivesIdenticalEncodings) {
  TempDir dir;
  std::string text = sample_text() + std::string("\0\x01\"\\\n", 5);
  BpeTokenizer tok = BpeTokenizer::train(text, 256 + 90);
  tok.save(dir.file("bpe.txt"));
  std::string file = read_bytes(dir.file("bpe.txt"));
  EXPECT_EQ(file.rfind("nanodist-tokenizer bpe\n", 0), 0u);
  std::unique_ptr<Tokenizer> loaded = Tokenizer::load(dir.file("bpe.txt"));
  EXPECT_EQ(loaded->kind(), "bpe");
  EXPECT_EQ(loaded->vocab_size(), tok.vocab_size());
  std::string probe = text + random_bytes(1000, 11);
  EXPECT_EQ(loaded->encode(probe), tok.encode(probe));
  EXPECT_EQ(loaded->decode(tok.encode(probe)), probe);
}

TEST(BpeTokenizer, BadArgumentsAndFilesAreErrors) {
  EXPECT_THROW(BpeTokenizer::train("abc", 255), Error);
  EXPECT_THROW(BpeTokenizer::train("", 300), Error);
  EXPECT_THROW(BpeTokenizer({{256, 1}}), Error);  // refers to itself
  BpeTokenizer tok({{'a', 'b'}});
  EXPECT_THROW(tok.decode({257}), Error);
  TempDir dir;
  write_bytes(dir.file("a.txt"), "nanodist-tokenizer bpe\nvocab_size 258\nmerges 2\n256 97 98\n");
  EXPECT_THROW(Tokenizer::load(dir.file("a.txt")), Error);  // truncated
  write_bytes(dir.file("b.txt"), "nanodist-tokenizer bpe\nvocab_size 257\nmerges 1\n256 97 300\n");
  EXPECT_THROW(Tokenizer::load(dir.file("b.txt")), Error);  // id out of range
  write_bytes(dir.file("c.txt"), "nanodist-tokenizer bpe\nvocab_size 300\nmerges 1\n256 97 98\n");
  EXPECT_THROW(Tokenizer::load(dir.file("c.txt")), Error);  // inconsistent vocab size
}

}  // namespace
}  // namespace nd
