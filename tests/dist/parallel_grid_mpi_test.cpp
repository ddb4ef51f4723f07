// The parallel grid under mpirun -np 2, 3, 4 and 8, for every (tp, pp) whose product divides the
// world (np 4: tp 2 x pp 2, tp 1 x pp 4, ...; np 8: tp 2 x dp 2 x pp 2), with native and ring
// collectives: every combination of axes hands out a group whose members (gathered inside it) are
// the closed-form world ranks in order (tp fastest, then dp, then pp), an all-reduce of
// rank-dependent values over it equals the closed-form sum over those members, and the embedding
// group joins the first and the last stage at the same tp and dp coordinates. Bad shapes raise on
// every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/ring_comm.h"
#include "dist/comm/world.h"
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

void expect_group_sums(Comm& group, const std::vector<double>& ranks, int world_rank, const std::string& what) {
  const int64_t count = 1003;
  const uint64_t seed = 70 + ranks.size();
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor values = rank_input(world_rank, count, dtype, seed);
    group.allreduce(values, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(values.to_double_vector(), sum_of(ranks, count, seed), 0.0, what.c_str()), 0)
        << dtype_name(dtype);
  }
}

// The closed form of the table: world rank q sits at tp q % tp, dp q / tp % dp, pp q / (tp dp).
struct Coords {
  int tp, dp, pp;
};
Coords coords_of(int q, int tp, int dp) { return {q % tp, q / tp % dp, q / (tp * dp)}; }

void check_grid(Comm& world, int tp, int pp, Algorithm collectives) {
  const int n = world.size(), w = world.rank(), dp = n / (tp * pp);
  GridOptions options;
  options.tp = tp;
  options.pp = pp;
  options.collectives = collectives;
  ParallelGrid grid(world, options);
  EXPECT_EQ(&grid.world(), &world);
  EXPECT_EQ(grid.world_rank(), w);
  EXPECT_EQ(grid.size(Axis::Tp), tp);
  EXPECT_EQ(grid.size(Axis::Dp), dp);
  EXPECT_EQ(grid.size(Axis::Pp), pp);
  const Coords mine = coords_of(w, tp, dp);
  EXPECT_EQ(grid.rank(Axis::Tp), mine.tp);
  EXPECT_EQ(grid.rank(Axis::Dp), mine.dp);
  EXPECT_EQ(grid.rank(Axis::Pp), mine.pp);
  EXPECT_EQ(grid.is_first_stage(), mine.pp == 0);
  EXPECT_EQ(grid.is_last_stage(), mine.pp == pp - 1);

  // Every combination of axes: the ranks that agree with this one on every axis left out.
  const std::vector<std::vector<Axis>> combinations = {
      {Axis::Tp}, {Axis::Dp}, {Axis::Pp}, {Axis::Tp, Axis::Dp}, {Axis::Tp, Axis::Pp}, {Axis::Dp, Axis::Pp},
      {Axis::Tp, Axis::Dp, Axis::Pp}};
  for (const std::vector<Axis>& axes : combinations) {
    auto in = [&](Axis a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); };
    std::string name;
    for (Axis a : axes) name += std::string(name.empty() ? "" : "+") + axis_name(a);
    std::vector<double> want;
    for (int q = 0; q < n; ++q) {
      const Coords c = coords_of(q, tp, dp);
      if ((in(Axis::Tp) || c.tp == mine.tp) && (in(Axis::Dp) || c.dp == mine.dp) && (in(Axis::Pp) || c.pp == mine.pp))
        want.push_back(q);
    }
    Comm& group = axes.size() == 1   ? grid.group(axes[0])
                  : axes.size() == 2 ? grid.group({axes[0], axes[1]})
                                     : grid.group({axes[0], axes[1], axes[2]});
    EXPECT_EQ(group.size(), static_cast<int>(want.size())) << name;
    EXPECT_EQ(members(group, w), want) << name;
    expect_group_sums(group, want, w, name + " group sum");
    if (collectives == Algorithm::Ring && group.size() > 1) {
      EXPECT_NE(dynamic_cast<RingComm*>(&group), nullptr) << name << " is not ring-decorated";
    }
  }
  EXPECT_EQ(&grid.model_parallel(), &grid.group({Axis::Tp, Axis::Pp}));
  EXPECT_EQ(&grid.tp(), &grid.group(Axis::Tp));
  // Groups with the same members are one comm: at pp 1 the model-parallel group is the tp group.
  if (pp == 1) {
    EXPECT_EQ(&grid.model_parallel(), &grid.tp());
  }

  // The embedding group: stage 0 and stage pp - 1 at this rank's (tp, dp); this rank alone at pp 1
  // and on a middle stage.
  std::vector<double> embedding;
  if (grid.in_embedding_group()) {
    for (int q = 0; q < n; ++q) {
      const Coords c = coords_of(q, tp, dp);
      if (c.tp == mine.tp && c.dp == mine.dp && (c.pp == 0 || c.pp == pp - 1)) embedding.push_back(q);
    }
  } else {
    embedding.push_back(w);
  }
  EXPECT_EQ(grid.in_embedding_group(), mine.pp == 0 || mine.pp == pp - 1);
  EXPECT_EQ(members(grid.embedding(), w), embedding);
  expect_group_sums(grid.embedding(), embedding, w, "embedding group sum");

  // A one-rank group is local, a group of everyone is the world itself (native): nothing is split.
  if (tp == 1) {
    EXPECT_STREQ(grid.tp().backend(), "local");
  }
  if (collectives == Algorithm::Native && tp * pp == 1) {
    EXPECT_EQ(&grid.dp(), &world);
  }
  if (collectives == Algorithm::Native && tp == n) {
    EXPECT_EQ(&grid.tp(), &world);
  }
}

TEST(ParallelGrid, GroupsForEveryShapeThatDividesTheWorld) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size();
  for (int pp = 1; pp <= n; ++pp) {
    for (int tp = 1; tp * pp <= n; ++tp) {
      if (n % (tp * pp) != 0) continue;
      for (Algorithm collectives : {Algorithm::Native, Algorithm::Ring}) {
        SCOPED_TRACE("world " + std::to_string(n) + " tp " + std::to_string(tp) + " pp " + std::to_string(pp) + " " +
                     algorithm_name(collectives));
        check_grid(*world, tp, pp, collectives);
      }
    }
  }
}

// The error names the numbers, and is raised on every rank (test_main fails the test if any rank
// did not throw).
TEST(ParallelGrid, ShapeThatDoesNotDivideTheWorldRaisesOnEveryRank) {
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
  // tp x pp must divide the world, and pp be >= 1.
  GridOptions too_big;
  too_big.tp = n;
  too_big.pp = 2;
  try {
    ParallelGrid grid(*world, too_big);
    ADD_FAILURE() << "tp " << n << " x pp 2 on " << n << " ranks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("= " + std::to_string(2 * n) + " does not divide the world size"),
              std::string::npos)
        << e.what();
  }
  GridOptions no_stages;
  no_stages.pp = 0;
  EXPECT_THROW(ParallelGrid(*world, no_stages), Error);
  // Ranks that disagree on tp, pp or the collectives all raise, instead of some of them waiting
  // in a split.
  EXPECT_THROW(ParallelGrid(*world, world->rank() == 0 ? 1 : n), Error);
  GridOptions stages;
  stages.pp = world->rank() == 0 ? 1 : n;
  EXPECT_THROW(ParallelGrid(*world, stages), Error);
  GridOptions mixed;
  mixed.collectives = world->rank() == 0 ? Algorithm::Ring : Algorithm::Native;
  EXPECT_THROW(ParallelGrid(*world, mixed), Error);
  // The world is still usable afterwards.
  Tensor one = Tensor::ones({4});
  world->allreduce(one, ReduceOp::Sum);
  EXPECT_EQ(one.to_double_vector()[3], n);
}

}  // namespace
}  // namespace nd::dist
