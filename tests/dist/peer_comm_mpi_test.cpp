// The peer-memory decorator where there is no peer memory (MPI on the CPU): it says why, has no
// PeerMemory, every collective is the wrapped comm's (closed forms at np 2, 3, 4), and a grid asked
// for peer or auto sums like native.
#include <gtest/gtest.h>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::sum_over_ranks;

TEST(PeerComm, WithoutPeerMemoryEverythingIsTheWrappedComms) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), r = world->rank();
  for (Algorithm mode : {Algorithm::OneShot, Algorithm::Peer, Algorithm::Auto, Algorithm::Push}) {
    PeerOptions options;
    options.mode = mode;
    PeerComm peer(*world, options);
    EXPECT_FALSE(peer.peer_usable());
    EXPECT_FALSE(peer.unusable_reason().empty());
    EXPECT_EQ(peer.peer_memory(), nullptr);
    EXPECT_EQ(peer.choice(64), mode == Algorithm::Auto ? Algorithm::Native : peer.choice(64));
    Tensor a = rank_input(r, 1001, DType::F32, 31);
    peer.allreduce(a, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(a.to_double_vector(), sum_over_ranks(n, 1001, 31), 0, "sum"), 0);
    Tensor b = Tensor::full({3}, static_cast<double>(r));
    peer.broadcast(b, n - 1);
    EXPECT_EQ(b.to_double_vector(), std::vector<double>(3, n - 1.0));
    std::unique_ptr<Comm> half = peer.split(r % 2, r);
    EXPECT_NE(dynamic_cast<PeerComm*>(half.get()), nullptr);
  }
}

TEST(PeerComm, GridOfPeerOrAutoSumsLikeNative) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), r = world->rank();
  for (const char* name : {"peer", "auto"}) {
    GridOptions options;
    options.collectives = parse_collectives(name);
    ParallelGrid grid(*world, options);
    EXPECT_STREQ(algorithm_name(grid.collectives()), name);
    Tensor a = rank_input(r, 333, DType::F32, 32);
    grid.dp().allreduce(a, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(a.to_double_vector(), sum_over_ranks(n, 333, 32), 0, name), 0);
  }
  EXPECT_THROW(parse_collectives("peers"), Error);
}

}  // namespace
}  // namespace nd::dist
