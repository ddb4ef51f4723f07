// The MPI communicator under mpirun -np 2, 3, 4: grouped point-to-point (a ring in which every
// rank sends first), native collectives against closed forms, broadcast, split and barrier;
// collectives whose layouts differ between ranks raise on every rank.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "dist/comm/world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rank_value;

TEST(MpiComm, WorldKnowsItsPlace) {
  auto comm = make_world_comm(Device::cpu());
  int64_t ranks[2] = {comm->rank(), 1};
  comm->host_allreduce(ranks, 2, HostReduce::Sum);
  EXPECT_EQ(ranks[0], int64_t(comm->size()) * (comm->size() - 1) / 2);  // every rank id once
  EXPECT_EQ(ranks[1], comm->size());
  if (comm->size() > 1) {
    EXPECT_STREQ(comm->backend(), "mpi");
  }
}

TEST(MpiComm, RingWhereEveryRankSendsFirstCompletes) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size(), r = comm->rank();
  const int64_t count = 1 << 20;  // far above any eager limit: blocking sends would deadlock
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor out = rank_input(r, count, dtype, 3);
    Tensor in = Tensor::zeros({count}, dtype);
    comm->group_start();
    comm->send(out, (r + 1) % n);
    comm->recv(in, (r - 1 + n) % n);
    comm->group_end();
    EXPECT_EQ(count_mismatches(in.to_double_vector(), rank_input((r - 1 + n) % n, count, DType::F32, 3).to_double_vector(),
                               0.0, "received"),
              0);
  }
}

TEST(MpiComm, NativeCollectivesMatchClosedForms) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size(), r = comm->rank();
  const int64_t block = 1001;
  for (DType dtype : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor all = rank_input(r, n * block, dtype, 11);
    Tensor reduced = Tensor::zeros({block}, dtype);
    comm->reduce_scatter(all, reduced, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(reduced.to_double_vector(), test::sum_over_ranks(n, block, 11, r * block), 0.0,
                               "reduce_scatter"),
              0);
    Tensor mine = rank_input(r, block, dtype, 12);
    Tensor gathered = Tensor::zeros({n * block}, dtype);
    comm->all_gather(mine, gathered);
    std::vector<double> want(n * block);
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < block; ++i) want[q * block + i] = rank_value(q, i, 12);
    EXPECT_EQ(count_mismatches(gathered.to_double_vector(), want, 0.0, "all_gather"), 0);
    Tensor avg = rank_input(r, block, dtype, 13);
    comm->allreduce(avg, ReduceOp::Avg);
    std::vector<double> mean = test::sum_over_ranks(n, block, 13);
    for (double& v : mean) v /= n;
    EXPECT_EQ(count_mismatches(avg.to_double_vector(), mean, test::rounding_tolerance(dtype), "allreduce avg"), 0);
  }
  Tensor wrong_output = Tensor::zeros({block + 1});
  EXPECT_THROW(comm->reduce_scatter(Tensor::zeros({n * block}), wrong_output, ReduceOp::Sum), Error);
}

TEST(MpiComm, BroadcastFromTheLastRank) {
  auto comm = make_world_comm(Device::cpu());
  const int root = comm->size() - 1, r = comm->rank();
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{r, 10 * r, -r}, {3});
  comm->broadcast(ints, root);
  EXPECT_EQ(ints.to_double_vector(), (std::vector<double>{double(root), 10.0 * root, -double(root)}));
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor values = rank_input(r, 4097, dtype, 21);
    comm->broadcast(values, root);
    EXPECT_EQ(count_mismatches(values.to_double_vector(), rank_input(root, 4097, dtype, 21).to_double_vector(), 0.0,
                               "broadcast"),
              0);
  }
  EXPECT_THROW(comm->broadcast(ints, comm->size()), Error);
}

TEST(MpiComm, SplitGroupsByColorOrderedByKey) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size(), r = comm->rank();
  const int color = r % 2;
  auto half = comm->split(color, -r);  // reversed order inside each color
  int members = 0, higher = 0;
  for (int q = 0; q < n; ++q) {
    if (q % 2 != color) continue;
    ++members;
    if (q > r) ++higher;
  }
  EXPECT_EQ(half->size(), members);
  EXPECT_EQ(half->rank(), higher);
  // A sum inside the sub-comm covers exactly the world ranks of that color.
  Tensor ids = Tensor::full({5}, double(r));
  half->allreduce(ids, ReduceOp::Sum);
  double want = 0;
  for (int q = color; q < n; q += 2) want += q;
  EXPECT_EQ(ids.to_double_vector()[4], want);
  EXPECT_THROW(comm->split(-1, 0), Error);
}

TEST(MpiComm, BarrierWaitsForTheSlowestRank) {
  auto comm = make_world_comm(Device::cpu());
  if (comm->size() == 1) GTEST_SKIP() << "needs two ranks";
  comm->barrier();
  auto start = std::chrono::steady_clock::now();
  if (comm->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  comm->barrier();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.09);
}

TEST(MpiComm, BadPeersAndDevicesAreErrors) {
  auto comm = make_world_comm(Device::cpu());
  Tensor t = Tensor::zeros({4});
  EXPECT_THROW(comm->send(t, comm->size()), Error);
  EXPECT_THROW(comm->recv(t, -1), Error);
}

// Each mismatch is a layout new to every rank, so each is caught (see Comm::agree_on_layout);
// test_main fails the test unless every rank threw.
TEST(MpiComm, MismatchedLayoutsRaiseOnEveryRank) {
  auto comm = make_world_comm(Device::cpu());
  if (comm->size() == 1) GTEST_SKIP() << "needs two ranks";
  const int n = comm->size(), r = comm->rank();
  const int64_t count = r == 0 ? 100 : 101;
  Tensor buffer = Tensor::ones({count});
  EXPECT_THROW(comm->allreduce(buffer, ReduceOp::Sum), Error);
  Tensor typed = Tensor::ones({64}, r == 0 ? DType::F32 : DType::BF16);
  EXPECT_THROW(comm->allreduce(typed, ReduceOp::Sum), Error);
  Tensor same = Tensor::ones({64});
  EXPECT_THROW(comm->allreduce(same, r == 0 ? ReduceOp::Sum : ReduceOp::Avg), Error);
  Tensor block = Tensor::ones({count});
  Tensor blocks = Tensor::ones({n * count});
  EXPECT_THROW(comm->reduce_scatter(blocks, block, ReduceOp::Sum), Error);
  EXPECT_THROW(comm->all_gather(block, blocks), Error);
  EXPECT_THROW(comm->broadcast(buffer, 0), Error);
  EXPECT_THROW(comm->broadcast(same, r == 0 ? 0 : 1), Error);
  // The comm is still usable, and an agreed layout keeps working.
  for (int i = 0; i < 3; ++i) {
    Tensor fine = Tensor::ones({10});
    comm->allreduce(fine, ReduceOp::Sum);
    EXPECT_EQ(fine.to_double_vector()[9], n);
  }
}

}  // namespace
}  // namespace nd::dist
