// One rank without mpirun: make_world_comm gives a LocalComm, collectives are identities, the
// ring is a no-op, and sends to self pair with recvs in order.
#include <gtest/gtest.h>

#include "dist/comm/local_comm.h"
#include "dist/comm/ring_allreduce.h"
#include "dist/comm/world.h"

namespace nd::dist {
namespace {

TEST(LocalComm, WorldWithoutMpirunIsOneLocalRank) {
  if (launched_under_mpi()) GTEST_SKIP() << "started by mpirun";
  auto comm = make_world_comm(Device::cpu());
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_STREQ(comm->backend(), "local");
}

TEST(LocalComm, CollectivesAreIdentities) {
  LocalComm comm;
  Tensor t = Tensor::from_vector(std::vector<float>{1.5f, -2.0f, 3.25f}, {3});
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
    comm.allreduce(t, op);
    ring_allreduce(comm, t, op);
    EXPECT_EQ(t.to_double_vector(), (std::vector<double>{1.5, -2.0, 3.25}));
  }
  Tensor out = Tensor::zeros({3});
  comm.reduce_scatter(t, out, ReduceOp::Sum);
  EXPECT_EQ(out.to_double_vector(), t.to_double_vector());
  out.zero_();
  comm.all_gather(t, out);
  EXPECT_EQ(out.to_double_vector(), t.to_double_vector());
  comm.broadcast(t, 0);
  comm.barrier();
  EXPECT_THROW(comm.broadcast(t, 1), Error);
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{1}, {1});
  EXPECT_THROW(comm.allreduce(ints, ReduceOp::Sum), Error);
}

TEST(LocalComm, SendToSelfPairsWithRecv) {
  LocalComm comm;
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2}, {2});
  Tensor b = Tensor::from_vector(std::vector<float>{3, 4}, {2});
  Tensor got_a = Tensor::zeros({2}), got_b = Tensor::zeros({2});
  comm.group_start();
  comm.recv(got_a, 0);  // recv posted before its send: matched when the group ends
  comm.send(a, 0);
  comm.send(b, 0);
  comm.recv(got_b, 0);
  comm.group_end();
  EXPECT_EQ(got_a.to_double_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(got_b.to_double_vector(), (std::vector<double>{3, 4}));
  Tensor lonely = Tensor::zeros({2});
  EXPECT_THROW(comm.recv(lonely, 0), Error);
  EXPECT_THROW(comm.send(a, 1), Error);
}

TEST(LocalComm, SplitGivesAnotherSingleRank) {
  LocalComm comm;
  auto sub = comm.split(3, 0);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_THROW(comm.split(-1, 0), Error);
}

TEST(RingChunk, ChunksTileTheBuffer) {
  for (int n : {1, 2, 3, 4, 7}) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{1000003}}) {
      int64_t next = 0, longest = 0, shortest = count;
      for (int c = 0; c < n; ++c) {
        RingChunk chunk = ring_chunk(count, n, c);
        EXPECT_EQ(chunk.begin, next);
        next += chunk.size;
        longest = std::max(longest, chunk.size);
        shortest = std::min(shortest, chunk.size);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(longest - shortest, 1);
    }
  }
  EXPECT_THROW(ring_chunk(10, 2, 2), Error);
}

}  // namespace
}  // namespace nd::dist
