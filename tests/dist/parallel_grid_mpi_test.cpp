// The parallel grid under mpirun -np 2, 3, 4, for every tp that divides the world (np 4: tp 1,
// 2, 4; np 3: tp 1, 3; np 2: tp 1, 2): tp groups are consecutive ranks, dp groups stride by tp,
// each group's members (gathered inside it) are the expected world ranks in rank order, and an
// all-reduce inside each group equals the closed-form sum over its members. A tp that does not
// divide the world, or differs between ranks, raises on every rank.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dist/parallel_grid.h"
#include "dist/world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rank_value;

// The world ranks of `comm`'s members in its rank order, gathered through `comm` itself.
std::vector<double> members(Comm& comm, int world_rank) {
  Tensor mine = Tensor::from_vector(std::vector<int32_t>{world_rank}, {1});
  Tensor all = Tensor::zeros({comm.size()}, DType::I32);
  comm.all_gather(mine, all);
  return all.to_double_vector();
}

// Sum over `ranks` of each rank's input (exact: small integers).
std::vector<double> sum_of(const std::vector<double>& ranks, int64_t count, uint64_t seed) {
  std::vector<double> sum(count, 0.0);
  for (double q : ranks)
    for (int64_t i = 0; i < count; ++i) sum[i] += rank_value(static_cast<int>(q), i, seed);
  return sum;
}

void expect_group_sums(Comm& group, const std::vector<double>& ranks, int world_rank, const char* what) {
  const int64_t count = 1003;
  const uint64_t seed = 70 + ranks.size();
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor values = rank_input(world_rank, count, dtype, seed);
    group.allreduce(values, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(values.to_double_vector(), sum_of(ranks, count, seed), 0.0, what), 0) << dtype_name(dtype);
  }
}

TEST(ParallelGrid, GroupsForEveryTpThatDividesTheWorld) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), w = world->rank();
  for (int tp = 1; tp <= n; ++tp) {
    if (n % tp != 0) continue;
    SCOPED_TRACE("world " + std::to_string(n) + " tp " + std::to_string(tp));
    ParallelGrid grid(*world, tp);
    EXPECT_EQ(&grid.world(), world.get());
    EXPECT_EQ(grid.world_rank(), w);
    EXPECT_EQ(grid.world_size(), n);
    EXPECT_EQ(grid.tp_size(), tp);
    EXPECT_EQ(grid.dp_size(), n / tp);

    // Closed forms: tp group g holds world ranks g*tp .. g*tp+tp-1; dp group j holds j, j+tp, ...
    std::vector<double> tp_want, dp_want;
    for (int q = 0; q < n; ++q) {
      if (q / tp == w / tp) tp_want.push_back(q);
      if (q % tp == w % tp) dp_want.push_back(q);
    }
    EXPECT_EQ(members(grid.tp(), w), tp_want);
    EXPECT_EQ(members(grid.dp(), w), dp_want);
    EXPECT_EQ(grid.tp_rank(), w - static_cast<int>(tp_want.front()));
    EXPECT_EQ(grid.dp_rank(), (w - static_cast<int>(dp_want.front())) / tp);
    expect_group_sums(grid.tp(), tp_want, w, "tp group sum");
    expect_group_sums(grid.dp(), dp_want, w, "dp group sum");
    std::vector<double> everyone;
    for (int q = 0; q < n; ++q) everyone.push_back(q);
    expect_group_sums(grid.world(), everyone, w, "world sum");

    // A one-rank group is local, a group of everyone is the world itself: nothing is split.
    if (tp == 1) {
      EXPECT_EQ(&grid.dp(), world.get());
      EXPECT_STREQ(grid.tp().backend(), "local");
    }
    if (tp == n) {
      EXPECT_EQ(&grid.tp(), world.get());
      EXPECT_STREQ(grid.dp().backend(), "local");
    }
    if (tp > 1 && tp < n) {
      EXPECT_STREQ(grid.tp().backend(), "mpi");
      EXPECT_STREQ(grid.dp().backend(), "mpi");
    }
  }
}

// The error names both numbers, and is raised on every rank (test_main fails the test if any
// rank did not throw).
TEST(ParallelGrid, TpThatDoesNotDivideTheWorldRaisesOnEveryRank) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size();
  std::vector<int> bad = {n + 1, 0, -2};
  if (n == 4) bad.push_back(3);
  for (int tp : bad) {
    try {
      ParallelGrid grid(*world, tp);
      ADD_FAILURE() << "tp " << tp << " on " << n << " ranks was accepted";
    } catch (const Error& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(std::to_string(tp)), std::string::npos) << message;
      if (tp > 0) {
        EXPECT_NE(message.find("world size " + std::to_string(n)), std::string::npos) << message;
      }
    }
  }
  // Ranks that disagree on tp all raise, instead of some of them waiting in a split.
  EXPECT_THROW(ParallelGrid(*world, world->rank() == 0 ? 1 : n), Error);
  // The world is still usable afterwards.
  Tensor one = Tensor::ones({4});
  world->allreduce(one, ReduceOp::Sum);
  EXPECT_EQ(one.to_double_vector()[3], n);
}

}  // namespace
}  // namespace nd::dist
