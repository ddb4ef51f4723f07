// Hostile data files: each crafted file below once crashed a reader, made it allocate without
// bound, leaked, or ended in an exception other than nd::Error (found by reading the readers and
// by the fuzz targets of tests/fuzz). Each must now be one input error naming what is wrong.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "data/gpt2_tokenizer.h"
#include "data/json_value.h"
#include "data/nanogpt_meta.h"
#include "data/token_file.h"
#include "data/tokenizer.h"
#include "tensor/error.h"
#include "temp_dir.h"
#include "common/expect_input_error.h"

namespace nd {
namespace {

using nd::testing::expect_input_error;

std::string le32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

TEST(HostileTokenizerFile, MergesThatKeepDoublingAreRefusedBeforeTheirBytesExist) {
  // Merge i joins id 255 + i with itself: token 256 + i spells 2^(i+1) bytes, 2^41 at the end.
  std::string text = "nanodist-tokenizer bpe\nvocab_size 296\nmerges 40\n256 97 97\n";
  for (int i = 1; i < 40; ++i) text += std::to_string(256 + i) + " " + std::to_string(255 + i) + " " +
                                       std::to_string(255 + i) + "\n";
  expect_input_error([&] { Tokenizer::from_text(text, "t.txt"); }, "bytes in all");
}

TEST(HostileTokenizerFile, ADuplicateMergeIsAnInputError) {
  const std::string text = "nanodist-tokenizer bpe\nvocab_size 258\nmerges 2\n256 97 98\n257 97 98\n";
  expect_input_error([&] { Tokenizer::from_text(text, "t.txt"); }, "appears twice");
}

std::string gpt2_head(int merges) {
  std::string text = "nanodist-tokenizer gpt2\nbyte_ids";
  for (int b = 0; b < 256; ++b) text += " " + std::to_string(b);
  return text + "\nmerges " + std::to_string(merges) + "\nspecials 0\n";
}

TEST(HostileTokenizerFile, Gpt2LineThatIsNoNumberIsAnInputError) {
  // std::stoll used to throw std::invalid_argument here.
  expect_input_error([&] { Tokenizer::from_text(gpt2_head(0) + "bogus 1 2\n", "t.txt"); }, "expected a key");
}

TEST(HostileTokenizerFile, Gpt2MergeOfANegativeIdIsRefused) {
  // The id used to index the byte table before any check (a read before the table).
  expect_input_error([&] { Tokenizer::from_text(gpt2_head(1) + "256 -5 3\n", "t.txt"); }, "must join ids below");
}

TEST(HostileHuggingFaceTokenizer, ATokenIdPastInt32IsRefused) {
  // 2^62 used to be cast to an int32 id (0 here), into another token's place.
  TempDir dir;
  write_bytes(dir.file("tokenizer.json"),
              R"({"model":{"type":"BPE","vocab":{"a":4611686018427387904},"merges":[]}})");
  expect_input_error([&] { gpt2_tokenizer_text_from_dir(dir.path.string()); },
                     "id of a token 4611686018427387904 is outside [0, 2147483647]");
}

// A meta.pkl: PROTO 4, then `body`, then STOP.
std::string pickle(const std::string& body) { return std::string("\x80\x04", 2) + body + "."; }
const std::string kEmptyDict = "}";
const std::string kMemoize = "\x94";
std::string str(const std::string& s) { return "\x8c" + std::string(1, static_cast<char>(s.size())) + s; }
std::string get(int memo) { return "h" + std::string(1, static_cast<char>(memo)); }
const std::string kSetItem = "s";

NanoGptMeta read_meta(const TempDir& dir, const std::string& bytes) {
  write_bytes(dir.file("meta.pkl"), bytes);
  return read_nanogpt_meta(dir.file("meta.pkl"));
}

TEST(HostileMetaPkl, ADictHeldByItselfIsRefused) {
  // d = {}; d['itos'] = d: a cycle that kept its dicts alive for ever (a leak per file read).
  TempDir dir;
  expect_input_error([&] { read_meta(dir, pickle(kEmptyDict + kMemoize + str("itos") + get(0) + kSetItem)); },
                     "nests dicts");
}

TEST(HostileMetaPkl, DictsNestedDeeperThanMetaPklsAreRefused) {
  // {'a': {'b': {}}}: a chain of such dicts, as deep as the file is long, was freed recursively.
  TempDir dir;
  const std::string body = kEmptyDict + kMemoize + str("a") + kEmptyDict + kMemoize + kSetItem + get(1) + str("b") +
                           kEmptyDict + kSetItem;
  expect_input_error([&] { read_meta(dir, pickle(body)); }, "nests dicts");
}

TEST(HostileMetaPkl, AVocabularyPastInt32IsRefused) {
  // vocab_size = 2^40 (LONG1 of 6 bytes): the model's int vocabulary would have wrapped.
  TempDir dir;
  const std::string big = std::string("\x8a\x06", 2) + std::string("\0\0\0\0\0\x01", 6);
  expect_input_error([&] { read_meta(dir, pickle(kEmptyDict + str("vocab_size") + big + kSetItem)); },
                     "no vocab_size in [1, 2147483647]");
}

TEST(HostileTokenFile, ATokenOutsideTheHeadersVocabularyIsAnInputError) {
  TempDir dir;
  std::string bytes = le32(kTokenFileMagic) + le32(kTokenFileVersion) + le32(8) + le32(2) + le32(2);
  bytes.resize(kTokenFileHeaderInts * 4, '\0');
  bytes += std::string("\x01\x00\x09\x00", 4);  // tokens 1 and 9 of a vocabulary of 8
  write_bytes(dir.file("train.bin"), bytes);
  expect_input_error([&] { TokenFile::open(dir.file("train.bin")); }, "token 1 is 9, outside the vocabulary of size 8");
}

TEST(HostileJson, NestingTwoHundredThousandDeepIsAnError) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_input_error([&] { parse_json(deep, "config.json"); }, "nesting deeper than");
}

}  // namespace
}  // namespace nd
