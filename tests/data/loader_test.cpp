// BatchLoader and EvalReader: shapes, targets shifted by one against the token array,
// reproducibility, rank sharding (N ranks with B/N == 1 rank with B), state restore, errors.
#include <gtest/gtest.h>

#include <set>

#include "data/loader.h"
#include "tensor/error.h"

namespace nd {
namespace {

// Tokens 0..n-1 mod vocab, scrambled so that windows at different offsets differ.
std::shared_ptr<const TokenFile> make_tokens(int64_t n, int64_t vocab = 1000) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + 13) % vocab);
  return std::make_shared<const TokenFile>(std::move(t), vocab);
}

std::vector<int32_t> values(const Tensor& t) {
  const int32_t* p = t.data<int32_t>();
  return std::vector<int32_t>(p, p + t.numel());
}

// Rows of a (B, T) batch as vectors.
std::vector<std::vector<int32_t>> rows(const Tensor& t) {
  std::vector<int32_t> v = values(t);
  int64_t T = t.size(1);
  std::vector<std::vector<int32_t>> out;
  for (int64_t b = 0; b < t.size(0); ++b) out.emplace_back(v.begin() + b * T, v.begin() + (b + 1) * T);
  return out;
}

TEST(BatchLoader, ShapesAndTargetsAreInputsShiftedByOne) {
  auto tokens = make_tokens(500);
  BatchLoader loader(tokens, 4, 16, 0, 1, 1337);
  for (int step = 0; step < 5; ++step) {
    Batch batch = loader.next_batch();
    EXPECT_EQ(batch.inputs.shape(), (Shape{4, 16}));
    EXPECT_EQ(batch.targets.shape(), (Shape{4, 16}));
    EXPECT_EQ(batch.inputs.dtype(), DType::I32);
    EXPECT_TRUE(batch.inputs.device().is_cpu());
    std::vector<int32_t> in = values(batch.inputs), tg = values(batch.targets);
    for (int64_t b = 0; b < 4; ++b) {
      int64_t offset = loader.offset_of(static_cast<uint64_t>(step), b);
      ASSERT_GE(offset, 0);
      ASSERT_LE(offset, 500 - 16 - 1);
      for (int64_t t = 0; t < 16; ++t) {
        EXPECT_EQ(in[b * 16 + t], (*tokens)[offset + t]);
        EXPECT_EQ(tg[b * 16 + t], (*tokens)[offset + t + 1]);
      }
    }
  }
  EXPECT_EQ(loader.step(), 5u);
}

TEST(BatchLoader, OffsetsCoverTheWholeRange) {
  // n - T = 4 possible offsets {0, 1, 2, 3}; every one must be drawn, nothing outside.
  BatchLoader loader(make_tokens(12), 8, 8, 0, 1, 5);
  std::set<int64_t> seen;
  for (uint64_t s = 0; s < 50; ++s)
    for (int64_t b = 0; b < 8; ++b) seen.insert(loader.offset_of(s, b));
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2, 3}));
}

TEST(BatchLoader, SameSeedSameBatchesOtherSeedOtherBatches) {
  auto tokens = make_tokens(2000);
  BatchLoader a(tokens, 4, 8, 0, 1, 42), b(tokens, 4, 8, 0, 1, 42), c(tokens, 4, 8, 0, 1, 43);
  for (int step = 0; step < 3; ++step) {
    Batch x = a.next_batch(), y = b.next_batch(), z = c.next_batch();
    EXPECT_EQ(values(x.inputs), values(y.inputs));
    EXPECT_NE(values(x.inputs), values(z.inputs));
  }
  EXPECT_NE(values(a.batch_at(0).inputs), values(a.batch_at(1).inputs));
}

TEST(BatchLoader, RanksReadDifferentRowsWhoseUnionIsTheSingleRankBatch) {
  auto tokens = make_tokens(5000);
  const int64_t B = 12, T = 8;
  BatchLoader single(tokens, B, T, 0, 1, 7);
  for (int world : {2, 3, 4}) {
    std::vector<BatchLoader> ranks;
    for (int r = 0; r < world; ++r) ranks.emplace_back(tokens, B / world, T, r, world, 7);
    for (uint64_t step = 0; step < 3; ++step) {
      auto expected_in = rows(single.batch_at(step).inputs);
      auto expected_tg = rows(single.batch_at(step).targets);
      std::vector<std::vector<int32_t>> got_in, got_tg;
      for (int r = 0; r < world; ++r) {
        Batch batch = ranks[r].next_batch();
        EXPECT_EQ(batch.inputs.shape(), (Shape{B / world, T}));
        for (auto& row : rows(batch.inputs)) got_in.push_back(row);
        for (auto& row : rows(batch.targets)) got_tg.push_back(row);
      }
      EXPECT_EQ(got_in, expected_in) << "world " << world << " step " << step;
      EXPECT_EQ(got_tg, expected_tg) << "world " << world << " step " << step;
      EXPECT_NE(values(ranks[0].batch_at(step).inputs), values(ranks[1].batch_at(step).inputs));
    }
  }
}

TEST(BatchLoader, RestoredStateReproducesTheNextBatch) {
  auto tokens = make_tokens(3000);
  BatchLoader run(tokens, 3, 10, 1, 2, 99);
  for (int i = 0; i < 7; ++i) run.next_batch();
  uint64_t saved = run.step();
  Batch expected = run.next_batch();
  BatchLoader resumed(tokens, 3, 10, 1, 2, 99);
  resumed.set_step(saved);
  Batch got = resumed.next_batch();
  EXPECT_EQ(values(got.inputs), values(expected.inputs));
  EXPECT_EQ(values(got.targets), values(expected.targets));
  EXPECT_EQ(values(resumed.next_batch().inputs), values(run.next_batch().inputs));
}

TEST(BatchLoader, TooShortDataAndBadArgumentsAreErrors) {
  auto tokens = make_tokens(16);
  try {
    BatchLoader(tokens, 2, 16, 0, 1, 1);
    FAIL() << "16 tokens cannot hold a window of 16 + 1";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("16 tokens"), std::string::npos) << what;
    EXPECT_NE(what.find("17"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(BatchLoader(tokens, 2, 15, 0, 1, 1));
  EXPECT_THROW(BatchLoader(tokens, 0, 8, 0, 1, 1), Error);
  EXPECT_THROW(BatchLoader(tokens, 2, 0, 0, 1, 1), Error);
  EXPECT_THROW(BatchLoader(tokens, 2, 8, 2, 2, 1), Error);
  EXPECT_THROW(EvalReader(tokens, 2, 16), Error);
}

TEST(EvalReader, ConsecutiveWindowsDeterministicAndSharded) {
  auto tokens = make_tokens(100);
  const int64_t B = 4, T = 8;  // (100 - 1) / 8 = 12 windows
  EvalReader single(tokens, B, T);
  EXPECT_EQ(single.num_windows(), 12);
  for (int64_t k = 0; k < 5; ++k) {
    Batch batch = single.batch(k);
    std::vector<int32_t> in = values(batch.inputs), tg = values(batch.targets);
    for (int64_t b = 0; b < B; ++b) {
      int64_t start = ((k * B + b) % 12) * T;  // wraps around after 3 batches
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(in[b * T + t], (*tokens)[start + t]);
        EXPECT_EQ(tg[b * T + t], (*tokens)[start + t + 1]);
      }
    }
    EXPECT_EQ(values(single.batch(k).inputs), in);
  }
  EvalReader r0(tokens, B / 2, T, 0, 2), r1(tokens, B / 2, T, 1, 2);
  for (int64_t k = 0; k < 4; ++k) {
    auto expected = rows(single.batch(k).inputs);
    auto got = rows(r0.batch(k).inputs);
    for (auto& row : rows(r1.batch(k).inputs)) got.push_back(row);
    EXPECT_EQ(got, expected) << "batch " << k;
  }
}

}  // namespace
}  // namespace nd
