// DDP given the grid's data-parallel comm (mpirun -np 2, 3, 4, every tp that divides the world):
// the parameters come from the dp group's rank 0 and gradients are averaged over the dp group
// only (closed forms from rank-dependent gradients), with grids of native and of ring collectives;
// a parameter that got no gradient still joins its bucket's all-reduce and stays zero.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/ops.h"
#include "dist/ddp.h"
#include "dist/parallel_grid.h"
#include "dist/world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rank_value;

TEST(DDPOverGrid, AveragesOverTheDataParallelGroupOnly) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), w = world->rank();
  const int64_t count = 777;
  for (int tp = 1; tp <= n; ++tp) {
    if (n % tp != 0) continue;
    for (Collectives collectives : {Collectives::Native, Collectives::Ring}) {
      SCOPED_TRACE("world " + std::to_string(n) + " tp " + std::to_string(tp) + " " + collectives_name(collectives));
      GridOptions shape;
      shape.tp = tp;
      shape.collectives = collectives;
      ParallelGrid grid(*world, shape);
      // Rank-dependent parameters, so the broadcast's source shows.
      Variable a(rank_input(w, count, DType::F32, 1), true), b(rank_input(w, count, DType::F32, 2), true);
      Variable unused(Tensor::zeros({5}), true);
      DDPOptions options;
      options.first_bucket_mb = options.bucket_mb = 1e-6;  // one parameter per bucket
      DistributedDataParallel ddp(grid.dp(), {a, b, unused}, options);
      ddp.broadcast_parameters();

      // The dp group's members (closed form: same tp rank, every tp-th world rank).
      std::vector<int> group;
      for (int q = w % tp; q < n; q += tp) group.push_back(q);
      EXPECT_EQ(count_mismatches(a.data().to_double_vector(), rank_input(group[0], count, DType::F32, 1).to_double_vector(),
                                 0.0, "broadcast parameter"),
                0);

      ddp.prepare_backward(true);
      Variable sum = ops::add(a, b);
      sum.backward(rank_input(w, count, DType::F32, 3));  // d sum / d a = d sum / d b = g of this rank
      ddp.finish_gradient_sync();
      std::vector<double> mean(count, 0.0);
      for (int q : group)
        for (int64_t i = 0; i < count; ++i) mean[i] += rank_value(q, i, 3);
      for (double& v : mean) v /= static_cast<double>(group.size());
      EXPECT_EQ(count_mismatches(a.grad().to_double_vector(), mean, 1e-6, "grad of a"), 0);
      EXPECT_EQ(count_mismatches(b.grad().to_double_vector(), mean, 1e-6, "grad of b"), 0);
      EXPECT_EQ(unused.grad().to_double_vector(), std::vector<double>(5, 0.0));
    }
  }
}

}  // namespace
}  // namespace nd::dist
