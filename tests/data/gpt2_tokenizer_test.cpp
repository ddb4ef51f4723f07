// GPT-2's tokenizer files read into a "gpt2" tokenizer: vocab.json + merges.txt (and
// tokenizer.json) written here the way GPT-2's are laid out (the 256 byte characters of
// bytes_to_unicode in its order, then one token per merge, then <|endoftext|>) for a BPE learned
// here; the ids are the learned BPE's with GPT-2's byte ids (space is 220, "!" is 0 as in GPT-2),
// text round-trips, the special token decodes, and llm.c shards with the files beside them get
// the tokenizer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "train/train_fixture.h"
#include "data/bpe_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/token_dataset.h"
#include "foreign_token_writers.h"
#include "tensor/error.h"

namespace nd {
namespace {

using train::testing::TempDir;

// GPT-2's bytes_to_unicode, in its order: the printable bytes first (each its own character),
// then the others in byte order as U+0100, U+0101, ...; GPT-2's id of a byte is its place here.
std::vector<std::pair<int, std::string>> gpt2_byte_order() {
  std::vector<std::pair<int, std::string>> out;
  auto utf8 = [](unsigned c) {
    std::string s;
    if (c < 0x80) return std::string(1, static_cast<char>(c));
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
    return s;
  };
  std::vector<bool> printable(256, false);
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  for (int b = 0; b < 256; ++b)
    if (printable[b]) out.emplace_back(b, utf8(b));
  unsigned next = 256;
  for (int b = 0; b < 256; ++b)
    if (!printable[b]) out.emplace_back(b, utf8(next++));
  return out;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct Gpt2Files {
  std::vector<int32_t> byte_id;        // byte -> GPT-2 id
  std::vector<std::string> token_text; // GPT-2 id -> its characters
};

// Writes DIR/vocab.json and DIR/merges.txt (or DIR/tokenizer.json) for `bpe` in GPT-2's layout.
Gpt2Files write_gpt2_files(const BpeTokenizer& bpe, const std::string& dir, bool tokenizer_json) {
  std::filesystem::create_directories(dir);
  Gpt2Files f;
  f.byte_id.assign(256, -1);
  std::vector<std::string> char_of_byte(256);
  for (const auto& [b, chars] : gpt2_byte_order()) {
    f.byte_id[b] = static_cast<int32_t>(f.token_text.size());
    f.token_text.push_back(chars);
    char_of_byte[b] = chars;
  }
  auto text_of = [&](int32_t our_id) {
    std::string s;
    for (unsigned char c : bpe.token_bytes(our_id)) s += char_of_byte[c];
    return s;
  };
  std::vector<std::string> merges;
  for (size_t i = 0; i < bpe.merges().size(); ++i) {
    merges.push_back(text_of(bpe.merges()[i].left) + " " + text_of(bpe.merges()[i].right));
    f.token_text.push_back(text_of(static_cast<int32_t>(256 + i)));
  }
  f.token_text.push_back("<|endoftext|>");
  std::string vocab = "{";
  for (size_t id = 0; id < f.token_text.size(); ++id)
    vocab += (id ? ", " : "") + json_quote(f.token_text[id]) + ": " + std::to_string(id);
  vocab += "}";
  if (tokenizer_json) {
    std::string m = "[";
    for (size_t i = 0; i < merges.size(); ++i) {
      const size_t space = merges[i].find(' ');
      m += (i ? ", " : "") + std::string("[") + json_quote(merges[i].substr(0, space)) + ", " +
           json_quote(merges[i].substr(space + 1)) + "]";
    }
    std::ofstream(dir + "/tokenizer.json") << "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": "
                                           << f.token_text.size() - 1 << ", \"content\": \"<|endoftext|>\"}], "
                                           << "\"model\": {\"type\": \"BPE\", \"vocab\": " << vocab
                                           << ", \"merges\": " << m << "]}}";
  } else {
    std::ofstream(dir + "/vocab.json") << vocab;
    std::ofstream out(dir + "/merges.txt");
    out << "#version: 0.2\n";
    for (const std::string& line : merges) out << line << "\n";
  }
  return f;
}

class Gpt2TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    text = train::testing::tiny_text(4000) + " Caf\xc3\xa9 \"quoted\" back\\slash!\n";
    bpe = std::make_unique<BpeTokenizer>(BpeTokenizer::train(text, 300));
  }
  std::string text;
  std::unique_ptr<BpeTokenizer> bpe;
  TempDir dir;
};

TEST_F(Gpt2TokenizerFiles, IdsAreTheBpesWithGpt2ByteIds) {
  for (bool tokenizer_json : {false, true}) {
    SCOPED_TRACE(tokenizer_json ? "tokenizer.json" : "vocab.json + merges.txt");
    const std::string where = dir / (tokenizer_json ? "tj" : "vm");
    const Gpt2Files files = write_gpt2_files(*bpe, where, tokenizer_json);
    ASSERT_TRUE(has_hugging_face_tokenizer(where));
    const std::string file_text = gpt2_tokenizer_text_from_dir(where);
    std::unique_ptr<Tokenizer> gpt2 = Tokenizer::from_text(file_text, where);
    EXPECT_EQ(gpt2->kind(), "gpt2");
    EXPECT_EQ(gpt2->vocab_size(), bpe->vocab_size() + 1);
    // GPT-2's own byte ids: "!" is 0, "A" 32, space ("\u0120") 220.
    EXPECT_EQ(gpt2->encode("!"), std::vector<int32_t>{0});
    EXPECT_EQ(gpt2->encode("A"), std::vector<int32_t>{32});
    EXPECT_EQ(gpt2->encode(" "), std::vector<int32_t>{220});
    std::vector<int32_t> expected = bpe->encode(text);
    for (int32_t& id : expected)
      if (id < 256) id = files.byte_id[id];
    EXPECT_EQ(gpt2->encode(text), expected);
    EXPECT_EQ(gpt2->decode(gpt2->encode(text)), text);
    EXPECT_EQ(gpt2->decode({gpt2->encode("the")[0], gpt2->vocab_size() - 1}), "the<|endoftext|>");
    EXPECT_THROW(gpt2->decode({gpt2->vocab_size()}), Error);
    // Its own file text reads back to the same tokenizer.
    EXPECT_EQ(Tokenizer::from_text(file_text, "again")->encode(text), expected);
  }
}

TEST_F(Gpt2TokenizerFiles, LayoutsItCannotReadAreOneError) {
  write_gpt2_files(*bpe, dir / "bad", false);
  std::ofstream(dir / "bad/merges.txt", std::ios::app) << "zz qq\n";  // a merge making no token
  try {
    gpt2_tokenizer_text_from_dir(dir / "bad");
    FAIL() << "a merge without its token was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input());
    EXPECT_NE(e.message().find("does not make token"), std::string::npos) << e.message();
  }
}

TEST_F(Gpt2TokenizerFiles, LlmcShardsWithTheFilesBesideThemGetIt) {
  write_gpt2_files(*bpe, dir / "shards", false);
  std::vector<uint32_t> ids;
  for (int32_t id : Tokenizer::from_text(gpt2_tokenizer_text_from_dir(dir / "shards"), "t")->encode(text))
    ids.push_back(static_cast<uint32_t>(id));
  testing::write_gpt2_shard(dir / "shards/tiny_train_000001.bin", ids);
  testing::write_gpt2_shard(dir / "shards/tiny_val_000000.bin", ids);
  const TokenDataset data = open_token_dataset(dir / "shards", bpe->vocab_size() + 1);
  EXPECT_EQ(data.tokenizer_text.rfind("nanodist-tokenizer gpt2\n", 0), 0u);
  EXPECT_NE(data.format.find("GPT-2's tokenizer"), std::string::npos) << data.format;
  EXPECT_THROW(open_token_dataset(dir / "shards", 50257), Error) << "the files' vocabulary must match the shards'";
}

}  // namespace
}  // namespace nd
