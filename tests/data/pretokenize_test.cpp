// The GPT-2 pre-split on hand-checked strings (expected chunks worked out from the regex).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/pretokenize.h"

namespace nd {
namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view c : split_into_chunks(text)) out.emplace_back(c);
  return out;
}

using Chunks = std::vector<std::string>;

TEST(Pretokenize, WordsTakeTheirLeadingSpace) {
  EXPECT_EQ(split("Hello world"), (Chunks{"Hello", " world"}));
  EXPECT_EQ(split("hello, world."), (Chunks{"hello", ",", " world", "."}));
  EXPECT_EQ(split("x ?!y"), (Chunks{"x", " ?!", "y"}));
}

TEST(Pretokenize, Contractions) {
  EXPECT_EQ(split("I'm here's"), (Chunks{"I", "'m", " here", "'s"}));
  EXPECT_EQ(split("you'll've'd't're"), (Chunks{"you", "'ll", "'ve", "'d", "'t", "'re"}));
  EXPECT_EQ(split("it 's"), (Chunks{"it", " '", "s"}));   // no contraction after a space
  EXPECT_EQ(split("''s"), (Chunks{"''", "s"}));            // a punctuation run swallows the quote
  EXPECT_EQ(split("'x"), (Chunks{"'", "x"}));
}

TEST(Pretokenize, DigitsAreSeparateRuns) {
  EXPECT_EQ(split("year 2024!!"), (Chunks{"year", " 2024", "!!"}));
  EXPECT_EQ(split("abc123def"), (Chunks{"abc", "123", "def"}));
}

TEST(Pretokenize, WhitespaceRunsLeaveOneSpaceForTheNextWord) {
  EXPECT_EQ(split("abc  def"), (Chunks{"abc", " ", " def"}));
  EXPECT_EQ(split("x\n\ny"), (Chunks{"x", "\n", "\n", "y"}));
  EXPECT_EQ(split("\t\tx"), (Chunks{"\t", "\t", "x"}));
  EXPECT_EQ(split("  \tx"), (Chunks{"  ", "\t", "x"}));
  EXPECT_EQ(split("a  "), (Chunks{"a", "  "}));
  EXPECT_EQ(split("a\n"), (Chunks{"a", "\n"}));
  EXPECT_EQ(split("First Citizen:\nBefore"), (Chunks{"First", " Citizen", ":", "\n", "Before"}));
}

TEST(Pretokenize, HighBytesAreLettersAndNulIsPunctuation) {
  EXPECT_EQ(split("caf\xc3\xa9 ok"), (Chunks{"caf\xc3\xa9", " ok"}));
  EXPECT_EQ(split("\xff\xfe z"), (Chunks{"\xff\xfe", " z"}));
  EXPECT_EQ(split(std::string("a\0b", 3)), (Chunks{"a", std::string(1, '\0'), "b"}));
}

TEST(Pretokenize, ChunksConcatenateToTheInput) {
  std::string text;
  uint32_t state = 12345;
  for (int i = 0; i < 5000; ++i) {
    state = state * 1664525u + 1013904223u;
    text.push_back(static_cast<char>(state >> 24));
  }
  std::string joined;
  for (std::string_view c : split_into_chunks(text)) {
    EXPECT_FALSE(c.empty());
    joined += c;
  }
  EXPECT_EQ(joined, text);
  EXPECT_TRUE(split_into_chunks("").empty());
}

// Random texts over the bytes every rule of the scanner looks at (spaces of each kind, a quote
// and the contraction letters, digits, punctuation, bytes above 0x7f): at every split point the
// chunks of the two halves are the chunks of the whole, as the encoder in pieces relies on.
TEST(Pretokenize, HalvesAtASplitPointChunkAsTheWhole) {
  const std::string alphabet = std::string("  \n\t\r\v\f'srtldvemab9.,!-") + "\xc3\xa9\xe2\x80\x99";
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    uint32_t state = seed;
    auto next = [&] { return state = state * 1664525u + 1013904223u; };
    std::string text;
    for (int i = 0; i < 3000; ++i) text += alphabet[(next() >> 8) % alphabet.size()];
    const Chunks whole = split(text);
    int points = 0;
    for (size_t p = 0; p <= text.size(); ++p) {
      if (!is_split_point(text, p)) continue;
      ++points;
      Chunks halves = split(text.substr(0, p));
      const Chunks tail = split(text.substr(p));
      halves.insert(halves.end(), tail.begin(), tail.end());
      ASSERT_EQ(halves, whole) << "seed " << seed << ", split at " << p;
    }
    EXPECT_GT(points, 100) << "seed " << seed;
  }
  EXPECT_FALSE(is_split_point("a b", 0));
  EXPECT_FALSE(is_split_point("a b", 3));
  EXPECT_TRUE(is_split_point("a b", 1));
  EXPECT_FALSE(is_split_point("a  b", 2));  // inside a run of spaces
  EXPECT_FALSE(is_split_point("a b", 2));   // before a non-space
}

}  // namespace
}  // namespace nd
