// Helpers of the tensor-parallel tests: the tensor-parallel groups a world of N ranks can form
// (the grid's, dist/parallel/parallel_grid.h, native and ring-decorated), a tiny GPT they split, and
// comparisons of a rank's shard or full tensor against the tp = 1 reference, counting mismatches
// as |got - want| > atol + rtol |want|.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/ring_comm.h"
#include "dist/parallel/tensor_shard.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"
#include "tensor/random.h"

namespace nd::test {

// Every tp > 1 that divides the world size.
inline std::vector<int> tensor_parallel_sizes(int world_size) {
  std::vector<int> sizes;
  for (int tp = 2; tp <= world_size; ++tp)
    if (world_size % tp == 0) sizes.push_back(tp);
  return sizes;
}

// Collective over world: runs check(group, tp) for every tp > 1 that divides the world size, with
// this rank's tp group of a grid (native collectives) and the same group decorated with our ring.
template <typename Check>
void for_each_tp_comm(dist::Comm& world, Check check) {
  for (int tp : tensor_parallel_sizes(world.size())) {
    dist::ParallelGrid grid(world, tp);
    dist::RingComm ring(grid.tp());
    // On GPUs also peer memory (copy-engine reduce-scatters and all-gathers, peer all-reduces)
    // where they share it; on the CPU it would pass every call to the native group.
    std::unique_ptr<dist::PeerComm> peer;
    if (world.device().is_cuda()) peer = std::make_unique<dist::PeerComm>(grid.tp());
    for (dist::Comm* group : {&grid.tp(), static_cast<dist::Comm*>(&ring), static_cast<dist::Comm*>(peer.get())}) {
      if (!group) continue;
      SCOPED_TRACE(::testing::Message() << "tp " << tp
                                        << (group == &ring ? " ring" : group == peer.get() ? " peer" : " native"));
      check(*group, tp);
    }
  }
}

// Runs check(TensorParallel) for every tp group `world` can form, with native and ring collectives
// (and sequence parallelism when asked).
template <typename Check>
void for_each_tp_group(dist::Comm& world, Check check, bool sequence_parallel = false) {
  for_each_tp_comm(world, [&](dist::Comm& group, int) {
    SCOPED_TRACE(sequence_parallel ? "sequence-parallel" : "");
    check(dist::TensorParallel{&group, sequence_parallel});
  });
}

// A tiny GPT that every tp of 2, 3 or 4 splits: 12 heads, width 48, and 65 characters like
// Shakespeare's, so the vocabulary is padded for tp.
inline nn::GPTConfig tiny_tp_gpt_config(int tp, float dropout) {
  nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 12;
  c.n_embd = 48;
  c.block_size = 8;
  c.vocab_size = 65;
  c.padded_vocab_size = nn::padded_vocab_rows(c.vocab_size, tp, false);
  c.dropout = dropout;
  return c;
}

inline int64_t count_far(const Tensor& got, const Tensor& want, double atol, double rtol, const std::string& what) {
  EXPECT_EQ(got.shape(), want.shape()) << what;
  if (got.shape() != want.shape()) return 1;
  std::vector<double> g = got.to_double_vector(), w = want.to_double_vector();
  int64_t wrong = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])) continue;
    if (wrong < 5) ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", expected " << w[i];
    ++wrong;
  }
  return wrong;
}

// `shard` (any device) against rank `rank`'s shard of the full CPU tensor `full`.
inline int64_t count_far_from_shard(const Tensor& shard, const Tensor& full, const nn::ShardSpec& spec, int rank,
                                    int tp, double atol, double rtol, const std::string& what) {
  return count_far(shard.to(Device::cpu()), nn::shard_of(full.to(Device::cpu()), spec, rank, tp), atol, rtol, what);
}

inline Tensor random_ids(const Shape& shape, int vocab, uint64_t seed) {
  Generator g(seed);
  std::vector<int32_t> ids(shape_numel(shape));
  for (auto& id : ids) id = static_cast<int32_t>(g.next_u64() % vocab);
  return Tensor::from_vector(ids, shape);
}

}  // namespace nd::test
