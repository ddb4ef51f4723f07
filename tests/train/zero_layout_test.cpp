// The flat layouts of a pipeline's first and last stage differ (other blocks, the embeddings on one,
// the final LayerNorm on the other), yet under every ZeRO stage and bucket size the tied embedding
// that both hold is cut into the same shard slices on both: its own segment of the layout. Each data-
// parallel rank then owns the same pieces of the two copies, and their gradient sum
// (train/finalize_grads.h) runs on those pieces; the pieces of all ranks tile the tensor once.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "dist/parallel/gradient_buckets.h"
#include "nn/gpt.h"
#include "train/zero_layout.h"

namespace nd::train {
namespace {

using Pieces = std::vector<std::pair<int64_t, int64_t>>;  // [begin, end) of the tensor's elements

struct StageLayout {
  std::unique_ptr<nn::GPT> model;
  std::unique_ptr<dist::FlatParams> flat;
};

StageLayout stage_layout(int first, int end, int zero, int dp) {
  nn::GPTConfig c;
  c.n_layer = 4;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 300;  // wte 9600 elements: several 4096-byte alignment units
  Generator gen(5);
  StageLayout s;
  s.model = std::make_unique<nn::GPT>(c, gen, Device::cpu(), DType::F32, nn::GPTStage{first, end, {}});
  const nn::NamedParamInfos infos = s.model->named_param_infos();
  s.flat = std::make_unique<dist::FlatParams>(s.model->named_parameters(), DType::F32,
                                              zero_flat_options(zero, dp, block_units(infos, /*tied_apart=*/true)));
  return s;
}

// The pieces of the tied embedding that `rank` owns, relative to the tensor.
Pieces tied_pieces(const dist::FlatParams& flat, int zero, int dp, int rank, double bucket_mb) {
  dist::DataParallelOptions options;
  options.zero = zero;
  options.bucket_mb = bucket_mb;
  options.first_bucket_mb = bucket_mb;
  const std::vector<dist::BucketRange> plan =
      zero == 1 ? dist::sharded_buckets(flat, dp, options) : dist::unit_buckets(flat, dp);
  const dist::FlatEntry* tied = nullptr;
  for (const dist::FlatEntry& e : flat.entries())
    if (e.name == "transformer.wte.weight") tied = &e;
  EXPECT_NE(tied, nullptr);
  Pieces pieces;
  for (const dist::ShardSlice& s : dist::owned_slices(plan, rank, dp)) {
    const int64_t begin = std::max(tied->offset, s.begin);
    const int64_t end = std::min(tied->offset + tied->numel, s.begin + s.length);
    if (begin < end) pieces.push_back({begin - tied->offset, end - tied->offset});
  }
  return pieces;
}

TEST(ZeroLayoutTest, PipelineStagesCutTheTiedEmbeddingAlike) {
  for (int zero : {1, 2, 3})
    for (int dp : {2, 3, 4})
      for (double bucket_mb : {0.004, 0.02, 1.0}) {
        SCOPED_TRACE("zero " + std::to_string(zero) + ", dp " + std::to_string(dp) + ", bucket_mb " +
                     std::to_string(bucket_mb));
        const StageLayout first = stage_layout(0, 1, zero, dp), last = stage_layout(1, -1, zero, dp);
        ASSERT_NE(first.flat->numel(), last.flat->numel());  // the layouts differ around the copies
        int64_t covered = 0;
        for (int rank = 0; rank < dp; ++rank) {
          const Pieces mine = tied_pieces(*first.flat, zero, dp, rank, bucket_mb);
          EXPECT_EQ(mine, tied_pieces(*last.flat, zero, dp, rank, bucket_mb)) << "rank " << rank;
          for (const auto& [begin, end] : mine) covered += end - begin;
        }
        EXPECT_EQ(covered, 300 * 32);
      }
}

}  // namespace
}  // namespace nd::train
