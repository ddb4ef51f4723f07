// The data-parallel engine given the grid's data-parallel comm (mpirun -np 2, 3, 4, every tp that
// divides the world): the parameters come from the dp group's rank 0 and gradients are averaged
// over the dp group only (closed forms from rank-dependent gradients), with the native and the
// ring all-reduce; a parameter that got no gradient still joins its bucket's all-reduce and stays
// zero. With f32 main gradients beside bf16 parameters the micro-batches add up in f32.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/ops.h"
#include "dist/parallel/distributed_data_parallel.h"
#include "dist/parallel/parallel_grid.h"
#include "dist/comm/world.h"
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
    for (Algorithm collectives : {Algorithm::Native, Algorithm::Ring}) {
      SCOPED_TRACE("world " + std::to_string(n) + " tp " + std::to_string(tp) + " " + algorithm_name(collectives));
      GridOptions shape;
      shape.tp = tp;
      shape.collectives = collectives;
      ParallelGrid grid(*world, shape);
      // Rank-dependent parameters, so the broadcast's source shows.
      Variable a(rank_input(w, count, DType::F32, 1), true), b(rank_input(w, count, DType::F32, 2), true);
      Variable unused(Tensor::zeros({5}), true);
      DataParallelOptions options;
      options.first_bucket_mb = options.bucket_mb = 1e-6;  // one parameter per bucket
      FlatParams flat({{"a", a}, {"b", b}, {"unused", unused}}, DType::F32);
      DistributedDataParallel ddp(grid.dp(), flat, options);
      EXPECT_EQ(ddp.bucket_count(), 3u);
      ddp.broadcast_parameters();

      // The dp group's members (closed form: same tp rank, every tp-th world rank).
      std::vector<int> group;
      for (int q = w % tp; q < n; q += tp) group.push_back(q);
      EXPECT_EQ(count_mismatches(a.data().to_double_vector(), rank_input(group[0], count, DType::F32, 1).to_double_vector(),
                                 0.0, "broadcast parameter"),
                0);

      flat.zero_grad();
      ddp.prepare_backward(true, true);
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

// bf16 parameters with f32 main gradients, two micro-batches: the second adds 2^-9 to 1, which a
// bf16 sum would round away; the f32 sum keeps it, and the average over the group is exact.
TEST(DataParallel, MainGradientsAddMicroBatchesInF32) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), w = world->rank();
  ParallelGrid grid(*world, 1);
  Variable a(Tensor::zeros({3}, DType::BF16), true), b(Tensor::zeros({2, 2}, DType::BF16), true);
  FlatParams flat({{"a", a}, {"b", b}}, DType::F32);
  ASSERT_TRUE(flat.separate_grads());
  DataParallelOptions options;
  options.first_bucket_mb = options.bucket_mb = 1e-6;
  DistributedDataParallel ddp(grid.dp(), flat, options);
  const double small = 1.0 / 512;
  for (int step = 0; step < 2; ++step) {  // the second step must not see the first one's sums
    flat.zero_grad();
    for (int micro = 0; micro < 2; ++micro) {
      ddp.prepare_backward(micro == 0, micro == 1);
      // What backward does: write each gradient, then report it final (the hook).
      for (Variable* p : {&a, &b}) {
        GradSlot slot = p->grad_slot();
        const double value = micro == 0 ? 1.0 + w : small;
        slot.buffer.copy_from(Tensor::full(p->shape(), value, DType::BF16));
        p->autograd()->grad_hook(*p);
      }
    }
    ddp.finish_gradient_sync();
    double mean = 0;
    for (int q = 0; q < n; ++q) mean += 1.0 + q + small;
    mean /= n;
    for (const FlatEntry& e : flat.entries()) {
      Tensor g = flat.grad_of(e);
      EXPECT_EQ(g.dtype(), DType::F32);
      EXPECT_EQ(count_mismatches(g.to_double_vector(), std::vector<double>(g.numel(), mean), 1e-7, e.name.c_str()), 0);
    }
  }
}

}  // namespace
}  // namespace nd::dist
