// --data as other projects leave it: llm.c GPT-2 (u16) and Llama 3 (u32) shards in a directory or
// a glob, nanoGPT's raw uint16 train.bin/val.bin, each compared token for token with what was
// written, windows across shard boundaries, and every broken variant giving one clear error.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/loader.h"
#include "data/prepare.h"
#include "data/token_dataset.h"
#include "tensor/error.h"
#include "tests/data/foreign_token_writers.h"
#include "tests/data/temp_dir.h"

namespace nd {
namespace {

using testing::some_tokens;

template <typename F>
void expect_error_containing(F&& f, const std::string& needle) {
  try {
    f();
    FAIL() << "expected nd::Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

std::vector<int32_t> all_tokens(const TokenSource& s) {
  std::vector<int32_t> out(static_cast<size_t>(s.size()));
  s.copy(0, s.size(), out.data());
  return out;
}

std::vector<int32_t> as_i32(std::vector<uint32_t> a, const std::vector<uint32_t>& b = {}) {
  a.insert(a.end(), b.begin(), b.end());
  return std::vector<int32_t>(a.begin(), a.end());
}

TEST(TokenDataset, LlmcGpt2ShardDirectoryReadsInNameOrder) {
  TempDir dir;
  auto t0 = some_tokens(300, 50257, 1), t1 = some_tokens(200, 50257, 2), v0 = some_tokens(100, 50257, 3);
  t0[5] = 50256;  // <|endoftext|>, the largest GPT-2 id
  testing::write_gpt2_shard(dir.file("fineweb_train_000002.bin"), t1);  // written first, read second
  testing::write_gpt2_shard(dir.file("fineweb_train_000001.bin"), t0);
  testing::write_gpt2_shard(dir.file("fineweb_val_000000.bin"), v0);
  TokenDataset data = open_token_dataset(dir.path.string());
  EXPECT_EQ(data.vocab_size, 50257);
  EXPECT_TRUE(data.tokenizer_text.empty());
  EXPECT_NE(data.format.find("GPT-2 shards (2 train, 1 val)"), std::string::npos) << data.format;
  ASSERT_EQ(data.train->shards().size(), 2u);
  EXPECT_EQ(all_tokens(*data.train), as_i32(t0, t1));
  EXPECT_EQ(all_tokens(*data.val), as_i32(v0));
  EXPECT_EQ((*data.train)[300], static_cast<int32_t>(t1[0]));
}

TEST(TokenDataset, LlmcLlama3ShardsKeepIdsAbove16Bits) {
  TempDir dir;
  auto t = some_tokens(400, 128256, 4), v = some_tokens(64, 128256, 5);
  t[0] = 128255;
  t[1] = 70000;
  testing::write_llama3_shard(dir.file("tiny_train.bin"), t);
  testing::write_llama3_shard(dir.file("tiny_val.bin"), v);
  TokenDataset data = open_token_dataset(dir.path.string());
  EXPECT_EQ(data.vocab_size, 128256);
  EXPECT_NE(data.format.find("Llama 3"), std::string::npos) << data.format;
  EXPECT_EQ(all_tokens(*data.train), as_i32(t));
  // The eval window 0 of the loader starts at token 0: the i32 batch holds the u32 ids intact.
  EvalReader reader(data.train, 1, 8);
  Batch b = reader.batch(0);
  EXPECT_EQ(b.inputs.data<int32_t>()[0], 128255);
  EXPECT_EQ(b.inputs.data<int32_t>()[1], 70000);
  EXPECT_EQ(b.targets.data<int32_t>()[0], 70000);
}

TEST(TokenDataset, GlobOfTrainShardsAlsoReadsItsValTwin) {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "fw");
  auto t0 = some_tokens(50, 50257, 6), t1 = some_tokens(60, 50257, 7), v = some_tokens(40, 50257, 8);
  testing::write_gpt2_shard(dir.file("fw/fineweb_train_000001.bin"), t0);
  testing::write_gpt2_shard(dir.file("fw/fineweb_train_000002.bin"), t1);
  testing::write_gpt2_shard(dir.file("fw/fineweb_val_000000.bin"), v);
  TokenDataset data = open_token_dataset(dir.file("fw/fineweb_train_*.bin"));
  EXPECT_EQ(all_tokens(*data.train), as_i32(t0, t1));
  EXPECT_EQ(all_tokens(*data.val), as_i32(v));
  // One glob over both splits reads the same.
  TokenDataset both = open_token_dataset(dir.file("fw/fineweb_*.bin"));
  EXPECT_EQ(all_tokens(*both.train), as_i32(t0, t1));
  // --vocab-size overrides the GPT-2 default.
  EXPECT_EQ(open_token_dataset(dir.file("fw/fineweb_train_*.bin"), 50304).vocab_size, 50304);
}

TEST(TokenDataset, NanoGptRawUint16NeedsTheVocabSize) {
  TempDir dir;
  auto t = some_tokens(500, 65, 9), v = some_tokens(70, 65, 10);
  testing::write_nanogpt_bin(dir.file("train.bin"), t);
  testing::write_nanogpt_bin(dir.file("val.bin"), v);
  expect_error_containing([&] { open_token_dataset(dir.path.string()); }, "--vocab-size");
  TokenDataset data = open_token_dataset(dir.path.string(), 65);
  EXPECT_EQ(data.vocab_size, 65);
  EXPECT_TRUE(data.tokenizer_text.empty());
  EXPECT_EQ(all_tokens(*data.train), as_i32(t));
  EXPECT_EQ(all_tokens(*data.val), as_i32(v));
  expect_error_containing([&] { open_token_dataset(dir.path.string(), 60); }, "outside the vocabulary of size 60");
}

TEST(TokenDataset, OurOwnFormatStillReadsAndChecksTheVocabFlag) {
  TempDir dir;
  PrepareOptions options;
  options.out_dir = dir.path.string();
  options.tokenizer = "char";
  options.val_fraction = 0.2;
  prepare_text("the king and the queen of rome shall speak now to thee\n", "tiny", options);
  TokenDataset data = open_token_dataset(dir.path.string());
  EXPECT_FALSE(data.tokenizer_text.empty());
  EXPECT_EQ(data.format, "nanodist char");
  EXPECT_EQ(open_token_dataset(dir.path.string(), data.vocab_size).vocab_size, data.vocab_size);
  expect_error_containing([&] { open_token_dataset(dir.path.string(), data.vocab_size + 1); }, "disagrees");
  std::filesystem::remove(dir.path / "tokenizer.txt");
  expect_error_containing([&] { open_token_dataset(dir.path.string()); }, "tokenizer.txt is missing");
}

TEST(TokenDataset, OneSplitAloneNeedsOnlyItsOwnFiles) {
  TempDir dir;
  PrepareOptions options;
  options.out_dir = dir.path.string();
  options.val_fraction = 0.2;
  prepare_text("the king and the queen of rome shall speak now to thee\n", "tiny", options);
  const TokenDataset both = open_token_dataset(dir.path.string());
  std::filesystem::remove(dir.path / "train.bin");
  TokenDataset val = open_token_dataset(dir.path.string(), 0, DatasetSplits::Val);
  EXPECT_EQ(val.train, nullptr);
  EXPECT_EQ(all_tokens(*val.val), all_tokens(*both.val));
  EXPECT_EQ(val.vocab_size, both.vocab_size);
  expect_error_containing([&] { open_token_dataset(dir.path.string()); }, "train.bin");
  expect_error_containing([&] { open_token_dataset(dir.path.string(), 0, DatasetSplits::Train); }, "train.bin");

  TempDir ng;  // nanoGPT: val.bin alone
  auto v = some_tokens(70, 65, 10);
  testing::write_nanogpt_bin(ng.file("val.bin"), v);
  TokenDataset ng_val = open_token_dataset(ng.path.string(), 65, DatasetSplits::Val);
  EXPECT_EQ(ng_val.train, nullptr);
  EXPECT_EQ(all_tokens(*ng_val.val), as_i32(v));

  TempDir llmc;  // llm.c: train shards alone
  auto t = some_tokens(300, 50257, 1);
  testing::write_gpt2_shard(llmc.file("fineweb_train_000001.bin"), t);
  TokenDataset llmc_train = open_token_dataset(llmc.path.string(), 0, DatasetSplits::Train);
  EXPECT_EQ(llmc_train.val, nullptr);
  EXPECT_EQ(all_tokens(*llmc_train.train), as_i32(t));
  expect_error_containing([&] { open_token_dataset(llmc.path.string()); }, "no validation shards");
}

// Runs `f` with the working directory at `dir`, so that a bare file name is what a user types.
template <typename F>
void in_directory(const std::filesystem::path& dir, F&& f) {
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  try {
    f();
  } catch (...) {
    std::filesystem::current_path(before);
    throw;
  }
  std::filesystem::current_path(before);
}

TEST(TokenDataset, TextFileAsDataSuggestsPrepare) {
  TempDir dir;
  write_bytes(dir.file("tinyshakespeare.txt"), "First Citizen:\nBefore we proceed any further, hear me speak.\n");
  const std::string advice = "is a text file, not token data: tokenize it first with `nanodist prepare --input ";
  expect_error_containing([&] { open_token_dataset(dir.file("tinyshakespeare.txt")); },
                          advice + dir.file("tinyshakespeare.txt") + " --out DIR`");
  in_directory(dir.path, [&] {
    expect_error_containing([] { open_token_dataset("tinyshakespeare.txt"); },
                            "--data tinyshakespeare.txt " + advice + "tinyshakespeare.txt --out DIR`, then train with "
                                                                     "--data DIR");
  });
}

TEST(TokenDataset, TokenFileAsDataNamesItsDirectory) {
  TempDir dir;
  PrepareOptions options;
  options.out_dir = dir.path.string();
  prepare_text("the king and the queen of rome shall speak now to thee\n", "tiny", options);
  expect_error_containing([&] { open_token_dataset(dir.file("train.bin")); },
                          "is a file; --data names the directory that holds it (" + dir.file("train.bin") + " -> " +
                              dir.path.string() + ")");
  in_directory(dir.path, [] {
    expect_error_containing([] { open_token_dataset("val.bin"); },
                            "--data val.bin is a file; --data names the directory that holds it (val.bin -> .)");
  });
  TempDir llmc;  // an llm.c shard, whatever its name
  testing::write_gpt2_shard(llmc.file("shard.data"), some_tokens(300, 50257, 1));
  expect_error_containing([&] { open_token_dataset(llmc.file("shard.data")); }, "--data names the directory");
}

TEST(TokenSource, WindowsAcrossShardBoundariesMatchTheConcatenation) {
  TempDir dir;
  auto a = some_tokens(20, 50257, 11), b = some_tokens(17, 50257, 12), c = some_tokens(25, 50257, 13);
  testing::write_gpt2_shard(dir.file("x_train_0.bin"), a);
  testing::write_gpt2_shard(dir.file("x_train_1.bin"), b);
  testing::write_gpt2_shard(dir.file("x_train_2.bin"), c);
  testing::write_gpt2_shard(dir.file("x_val_0.bin"), a);
  TokenDataset data = open_token_dataset(dir.path.string());
  std::vector<int32_t> whole = as_i32(a, b);
  whole.insert(whole.end(), c.begin(), c.end());
  const int64_t T = 16;
  for (int64_t start = 0; start + T + 1 <= static_cast<int64_t>(whole.size()); ++start) {
    std::vector<int32_t> got(T);
    data.train->copy(start, T, got.data());
    ASSERT_EQ(got, std::vector<int32_t>(whole.begin() + start, whole.begin() + start + T)) << "start " << start;
  }
  // The loader's rows are windows of the concatenation too (shifted by one for targets).
  BatchLoader loader(data.train, 8, T, 0, 1, 3);
  Batch batch = loader.batch_at(0);
  for (int64_t r = 0; r < 8; ++r) {
    int64_t off = loader.offset_of(0, r);
    for (int64_t t = 0; t < T; ++t) {
      ASSERT_EQ(batch.inputs.data<int32_t>()[r * T + t], whole[static_cast<size_t>(off + t)]);
      ASSERT_EQ(batch.targets.data<int32_t>()[r * T + t], whole[static_cast<size_t>(off + t + 1)]);
    }
  }
}

TEST(TokenDataset, BrokenLlmcShardsAreOneClearError) {
  TempDir dir;
  auto tokens = some_tokens(64, 50257, 14);
  auto fresh = [&] {
    std::filesystem::remove_all(dir.path);
    std::filesystem::create_directories(dir.path);
    testing::write_gpt2_shard(dir.file("d_train_0.bin"), tokens);
    testing::write_gpt2_shard(dir.file("d_val_0.bin"), tokens);
  };
  const std::string d = dir.path.string();

  fresh();
  write_bytes(dir.file("d_train_1.bin"), testing::llmc_shard_bytes(20240522, 1, tokens));  // hellaswag's magic
  expect_error_containing([&] { open_token_dataset(d); }, "d_train_1.bin is not an llm.c token shard (magic 20240522");

  fresh();
  write_bytes(dir.file("d_train_1.bin"), testing::llmc_shard_bytes(testing::kGpt2Magic, 7, tokens));
  expect_error_containing([&] { open_token_dataset(d); }, "unknown version 7");
  write_bytes(dir.file("d_train_1.bin"), testing::llmc_shard_bytes(testing::kLlama3Magic, 1, tokens));
  expect_error_containing([&] { open_token_dataset(d); }, "unknown version 1");

  fresh();  // header says 65 tokens, the file holds 64; then 63
  write_bytes(dir.file("d_train_1.bin"), testing::llmc_shard_bytes(testing::kGpt2Magic, 1, tokens, 65));
  expect_error_containing([&] { open_token_dataset(d); }, "d_train_1.bin is 1152 bytes but its header promises 65");
  write_bytes(dir.file("d_train_1.bin"), testing::llmc_shard_bytes(testing::kGpt2Magic, 1, tokens, 63));
  expect_error_containing([&] { open_token_dataset(d); }, "promises 63 tokens");
  write_bytes(dir.file("d_train_1.bin"), std::string(100, '\0'));
  expect_error_containing([&] { open_token_dataset(d); }, "shorter than the 1024-byte header");

  fresh();
  auto bad = tokens;
  bad[40] = 50257;
  testing::write_gpt2_shard(dir.file("d_train_1.bin"), bad);
  expect_error_containing([&] { open_token_dataset(d); }, "d_train_1.bin: token 40 is 50257, outside the vocabulary");
  EXPECT_NO_THROW(open_token_dataset(d, 50304));  // a larger --vocab-size admits it

  fresh();
  testing::write_llama3_shard(dir.file("d_train_1.bin"), tokens);
  expect_error_containing([&] { open_token_dataset(d); }, "share one tokenizer");

  fresh();
  testing::write_gpt2_shard(dir.file("d_misc.bin"), tokens);
  expect_error_containing([&] { open_token_dataset(d); }, "cannot tell whether");

  fresh();
  std::filesystem::remove(dir.path / "d_val_0.bin");
  expect_error_containing([&] { open_token_dataset(d); }, "no validation shards");
  expect_error_containing([&] { open_token_dataset(dir.file("nothing_*.bin")); }, "no file matches");
  std::filesystem::remove(dir.path / "d_train_0.bin");
  expect_error_containing([&] { open_token_dataset(d); }, "holds no token files");
}

TEST(TokenDataset, ShardShorterThanOneBlockIsAnError) {
  TempDir dir;
  testing::write_gpt2_shard(dir.file("s_train_0.bin"), some_tokens(100, 50257));
  testing::write_gpt2_shard(dir.file("s_train_1.bin"), some_tokens(10, 50257));
  testing::write_gpt2_shard(dir.file("s_val_0.bin"), some_tokens(100, 50257));
  TokenDataset data = open_token_dataset(dir.path.string());
  expect_error_containing([&] { BatchLoader(data.train, 2, 16, 0, 1, 1); },
                          "s_train_1.bin has 10 tokens, fewer than block size 16 + 1");
  expect_error_containing([&] { EvalReader(data.train, 2, 16); }, "s_train_1.bin has 10 tokens");
  EXPECT_NO_THROW(BatchLoader(data.train, 2, 9, 0, 1, 1));
}

TEST(TokenDataset, BrokenNanoGptFilesAreOneClearError) {
  TempDir dir;
  testing::write_nanogpt_bin(dir.file("train.bin"), some_tokens(50, 65));
  write_bytes(dir.file("val.bin"), std::string(9, '\1'));
  expect_error_containing([&] { open_token_dataset(dir.path.string(), 65); }, "val.bin is 9 bytes, an odd length");
  std::filesystem::remove(dir.path / "val.bin");
  expect_error_containing([&] { open_token_dataset(dir.path.string(), 65); }, "val.bin");
  expect_error_containing([&] { open_token_dataset(dir.file("missing")); }, "does not exist");
}

}  // namespace
}  // namespace nd
