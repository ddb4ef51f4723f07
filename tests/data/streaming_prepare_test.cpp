// prepare() on text of any size: inputs as files, globs and directories read as their
// concatenation; text encoded in small pieces on several threads giving the ids of the whole
// text encoded at once; splits written as several shards read back as one stream; BPE learned
// from a sample; an interrupted job resumed into the files of an uninterrupted one.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>
#include <stdexcept>

#include "data/prepare.h"
#include "data/pretokenize.h"
#include "data/text_pieces.h"
#include "data/token_dataset.h"
#include "data/tokenizer.h"
#include "tensor/error.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

namespace fs = std::filesystem;

// Lines of words, numbers, punctuation, contractions, tabs and runs of spaces: every rule of the
// pre-split shows up at piece boundaries.
std::string varied_text(size_t bytes, uint32_t seed) {
  static const char* words[] = {"the", "king's", "and", "queen", "of", "rome", "1611", "shall", "speak,", "now", "to",
                                "thee.", "caf\xc3\xa9", "it'll", "--", "  ", "\t", "O!", "we're", "(verse)"};
  std::mt19937 rng(seed);
  std::string text;
  while (text.size() < bytes) {
    text += words[rng() % 20];
    text += rng() % 7 == 0 ? "\n" : " ";
  }
  text.resize(bytes);
  return text;
}

// train then val of a prepared directory, as one token stream.
std::vector<int32_t> all_tokens(const std::string& dir) {
  TokenDataset data = open_token_dataset(dir);
  std::vector<int32_t> out(static_cast<size_t>(data.train->size() + data.val->size()));
  data.train->copy(0, data.train->size(), out.data());
  data.val->copy(0, data.val->size(), out.data() + data.train->size());
  return out;
}

PrepareOptions options_for(const std::string& out, const std::string& tokenizer) {
  PrepareOptions o;
  o.out_dir = out;
  o.tokenizer = tokenizer;
  o.vocab_size = tokenizer == "bpe" ? 400 : 0;
  o.val_fraction = 0.15;
  return o;
}

// Many small pieces, several threads, small shards.
PrepareOptions streaming(PrepareOptions o) {
  o.piece_bytes = 97;
  o.threads = 3;
  o.shard_tokens = 1000;
  return o;
}

// Larger pieces with a checkpoint (three fsyncs) after each.
PrepareOptions checkpointing(PrepareOptions o) {
  o = streaming(o);
  o.piece_bytes = 1500;
  o.checkpoint_seconds = 0;
  return o;
}

TEST(StreamingPrepare, PiecesThreadsAndShardsGiveTheIdsOfTheWholeText) {
  for (const std::string tokenizer : {"char", "bpe"}) {
    TempDir dir;
    const std::string text = varied_text(20000, 3);
    PrepareStats s = prepare_text(text, "text", streaming(options_for(dir.file("out"), tokenizer)));
    EXPECT_GT(s.train_files, 1) << tokenizer;
    EXPECT_GE(s.val_files, 1) << tokenizer;
    EXPECT_EQ(s.resumed_at, -1);
    std::unique_ptr<Tokenizer> tok = Tokenizer::load(s.tokenizer_path);
    const std::vector<int32_t> whole = tok->encode(text);
    EXPECT_EQ(all_tokens(dir.file("out")), whole) << tokenizer;
    EXPECT_EQ(s.tokens, static_cast<int64_t>(whole.size()));
    EXPECT_EQ(s.val_tokens, std::llround(static_cast<double>(whole.size()) * 0.15));
    EXPECT_EQ(open_token_dataset(dir.file("out")).train->size(), s.train_tokens);
    EXPECT_FALSE(fs::exists(dir.file("out") + "/" + kPrepareWorkDir)) << "the work directory is removed at the end";
  }
}

TEST(StreamingPrepare, FilesGlobsAndDirectoriesReadAsTheirConcatenation) {
  TempDir dir;
  const std::string a = varied_text(3000, 1), b = varied_text(2000, 2), c = varied_text(2500, 3);
  fs::create_directories(dir.file("corpus/sub"));
  write_bytes(dir.file("corpus/a.txt"), a);
  write_bytes(dir.file("corpus/b.txt"), b);
  write_bytes(dir.file("corpus/sub/c.txt"), c);
  write_bytes(dir.file("corpus/.hidden"), "left out");
  for (const std::string tokenizer : {"char", "bpe"}) {
    const std::string one_shot = dir.file("one_" + tokenizer);
    prepare_text(a + b + c, "concatenation", options_for(one_shot, tokenizer));
    const std::vector<int32_t> expected = all_tokens(one_shot);
    const std::string expected_tokenizer = read_bytes(one_shot + "/tokenizer.txt");
    const std::vector<std::vector<std::string>> ways = {
        {dir.file("corpus/a.txt"), dir.file("corpus/b.txt"), dir.file("corpus/sub/c.txt")},
        {dir.file("corpus")},                                  // a directory, recursively, in path order
        {dir.file("corpus/*.txt"), dir.file("corpus/sub")}};  // a glob, then a directory
    for (size_t w = 0; w < ways.size(); ++w) {
      PrepareOptions o = streaming(options_for(dir.file("way" + std::to_string(w) + tokenizer), tokenizer));
      o.inputs = ways[w];
      PrepareStats s = prepare(o);
      EXPECT_EQ(s.chars, static_cast<int64_t>(a.size() + b.size() + c.size())) << w;
      EXPECT_EQ(all_tokens(o.out_dir), expected) << tokenizer << " way " << w;
      EXPECT_EQ(read_bytes(o.out_dir + "/tokenizer.txt"), expected_tokenizer) << tokenizer << " way " << w;
    }
  }
  // The output directory inside an input directory is not read as input.
  PrepareOptions inside = options_for(dir.file("corpus/prepared"), "char");
  inside.inputs = {dir.file("corpus")};
  prepare(inside);
  EXPECT_EQ(prepare(inside).chars, static_cast<int64_t>(a.size() + b.size() + c.size()));
}

TEST(StreamingPrepare, BadInputsAreOneClearError) {
  TempDir dir;
  fs::create_directories(dir.file("empty_dir"));
  auto error_of = [&](const std::vector<std::string>& inputs) {
    PrepareOptions o = options_for(dir.file("out"), "char");
    o.inputs = inputs;
    try {
      prepare(o);
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_input()) << e.what();
      return e.message();
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of({dir.file("*.txt")}), "--input " + dir.file("*.txt") + " matches no file");
  EXPECT_EQ(error_of({dir.file("empty_dir")}), "--input " + dir.file("empty_dir") + " is a directory that holds no text file");
  EXPECT_NE(error_of({dir.file("missing.txt")}).find("missing.txt"), std::string::npos);
}

// The progress callback stopping the job stands for a crash: the state on disk is the last
// checkpoint, and the open part holds ids past it that the resumed job must cut off.
TEST(StreamingPrepare, AnInterruptedJobResumesIntoTheOneShotFiles) {
  for (const std::string tokenizer : {"char", "bpe"}) {
    TempDir dir;
    write_bytes(dir.file("in.txt"), varied_text(30000, 9));
    PrepareOptions o = checkpointing(options_for(dir.file("out"), tokenizer));
    o.inputs = {dir.file("in.txt")};
    for (double stop_at : {0.4, 0.8}) {
      o.progress = [stop_at](double f) {
        if (f > stop_at && f < 1.0) throw std::runtime_error("stopped");
      };
      EXPECT_THROW(prepare(o), std::runtime_error);
      EXPECT_TRUE(fs::exists(dir.file("out") + "/" + kPrepareWorkDir + "/state.txt"));
    }
    o.progress = nullptr;
    const PrepareStats resumed = prepare(o);
    EXPECT_GT(resumed.resumed_at, 0) << tokenizer;

    PrepareOptions one_shot = options_for(dir.file("one_shot"), tokenizer);
    one_shot.inputs = o.inputs;
    one_shot.shard_tokens = o.shard_tokens;
    const PrepareStats whole = prepare(one_shot);
    EXPECT_EQ(resumed.tokens, whole.tokens);
    EXPECT_EQ(resumed.train_files, whole.train_files);
    EXPECT_EQ(resumed.val_files, whole.val_files);
    for (const fs::directory_entry& e : fs::directory_iterator(dir.file("one_shot")))
      EXPECT_EQ(read_bytes(dir.file("out/" + e.path().filename().string())), read_bytes(e.path().string()))
          << tokenizer << ": " << e.path().filename();
    EXPECT_EQ(all_tokens(dir.file("out")), all_tokens(dir.file("one_shot")));
  }
}

TEST(StreamingPrepare, AnUnfinishedJobOfOtherOptionsIsNotOverwritten) {
  TempDir dir;
  write_bytes(dir.file("in.txt"), varied_text(5000, 4));
  PrepareOptions o = checkpointing(options_for(dir.file("out"), "char"));
  o.inputs = {dir.file("in.txt")};
  o.progress = [](double f) {
    if (f > 0.5 && f < 1.0) throw std::runtime_error("stopped");
  };
  EXPECT_THROW(prepare(o), std::runtime_error);
  try {
    open_token_dataset(o.out_dir);
    FAIL() << "a directory whose prepare has not finished has no data yet";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("prepare.unfinished holds an unfinished nanodist prepare: rerun its command to finish it"),
              std::string::npos)
        << e.message();
  }
  o.progress = nullptr;
  o.val_fraction = 0.2;
  try {
    prepare(o);
    FAIL() << "another job over an unfinished one must be refused";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("holds an unfinished prepare of other inputs or options (its \"job val_fraction 0.15"
                               "\" then, \"job val_fraction 0.2\" now"),
              std::string::npos)
        << e.message();
  }
  o.val_fraction = 0.15;
  EXPECT_GT(prepare(o).resumed_at, 0);
}

TEST(StreamingPrepare, ShardsOfAnEarlierJobDoNotOutliveIt) {
  TempDir dir;
  const std::string text = varied_text(8000, 5);
  PrepareOptions o = streaming(options_for(dir.file("out"), "char"));
  EXPECT_GT(prepare_text(text, "text", o).train_files, 1);
  o.shard_tokens = 1 << 20;
  PrepareStats s = prepare_text(text, "text", o);
  EXPECT_EQ(s.train_files, 1);
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.file("out"))) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"tokenizer.txt", "train.bin", "val.bin"}));
}

// The sample a BPE vocabulary is learned from: spread over the text, cut at split points, so its
// chunks are chunks of the text, and the vocabulary it gives still encodes all of the text.
TEST(StreamingPrepare, BpeLearnsFromASampleOfTheText) {
  const std::string text = varied_text(200000, 6);
  const TextStream stream = TextStream::of_text(text, "text");
  const std::string sample = read_sample(stream, 20000);
  EXPECT_GT(sample.size(), 15000u);
  EXPECT_LT(sample.size(), 25000u);
  std::set<std::string_view> chunks;
  for (std::string_view c : split_into_chunks(text)) chunks.insert(c);
  for (std::string_view c : split_into_chunks(sample)) ASSERT_TRUE(chunks.count(c)) << "\"" << c << "\"";
  EXPECT_EQ(sample.compare(0, 100, text, 0, 100), 0) << "the first piece starts the text";
  EXPECT_GT(text.find(sample.substr(sample.size() - 100)), 190000u) << "the last piece comes from its end";

  TempDir dir;
  PrepareOptions o = options_for(dir.file("out"), "bpe");
  o.bpe_sample_bytes = 20000;
  PrepareStats s = prepare_text(text, "text", o);
  EXPECT_GT(s.vocab_size, 300);  // fewer than 400 when the sample runs out of pairs to merge
  std::unique_ptr<Tokenizer> tok = Tokenizer::load(s.tokenizer_path);
  EXPECT_EQ(tok->decode(all_tokens(dir.file("out"))), text);
}

}  // namespace
}  // namespace nd
