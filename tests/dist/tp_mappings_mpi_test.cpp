// The tensor-parallel mappings under mpirun, for every tp that divides the world (groups of
// consecutive ranks, the grid's): copy_to_tp and reduce_from_tp forward and backward against
// closed-form sums of rank-dependent inputs, with the native and the ring-decorated group; the max
// reduction;
// and the vocabulary-parallel cross-entropy against the fused cross-entropy of the full logits.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "dist/parallel/tp_mappings.h"
#include "dist/comm/world.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/nn/tp_test_util.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::sum_over_ranks;

constexpr int64_t kCount = 37;

TEST(TensorParallelMappings, CopyToTpSumsTheGradient) {
  test::for_each_tp_comm(test::mpi_world(), [](Comm& group, int tp) {
    Variable x(rank_input(0, kCount, DType::F32, 1), true);
    Variable y = copy_to_tp(x, TensorParallel{&group});
    EXPECT_EQ(y.data().to_double_vector(), x.data().to_double_vector());
    y.backward(rank_input(group.rank(), kCount, DType::F32, 2));
    EXPECT_EQ(count_mismatches(x.grad().to_double_vector(), sum_over_ranks(tp, kCount, 2), 0, "dx"), 0);
  });
}

TEST(TensorParallelMappings, ReduceFromTpSumsTheForward) {
  test::for_each_tp_comm(test::mpi_world(), [](Comm& group, int tp) {
    Variable w(rank_input(group.rank(), kCount, DType::F32, 3), true);
    // An op output (nothing else reads it), as reduce_from_tp requires.
    Variable partial = ops::add(w, Variable(Tensor::zeros({kCount})));
    Variable y = reduce_from_tp(partial, TensorParallel{&group});
    EXPECT_EQ(count_mismatches(y.data().to_double_vector(), sum_over_ranks(tp, kCount, 3), 0, "y"), 0);
    Tensor g = rank_input(0, kCount, DType::F32, 4);
    y.backward(g);
    EXPECT_EQ(w.grad().to_double_vector(), g.to_double_vector());
  });
}

TEST(TensorParallelMappings, OneRankIsTheIdentity) {
  Variable x(rank_input(0, kCount, DType::F32, 5), true);
  EXPECT_TRUE(copy_to_tp(x, TensorParallel{}).same(x));
  EXPECT_TRUE(reduce_from_tp(x, TensorParallel{}).same(x));
}

TEST(TensorParallelMappings, MaxReductionRunsNativeUnderRing) {
  test::for_each_tp_comm(test::mpi_world(), [](Comm& group, int tp) {
    Tensor buffer = rank_input(group.rank(), kCount, DType::F32, 6);
    allreduce_for_tp(group, buffer, ReduceOp::Max);
    std::vector<double> want(kCount, -1e9);
    for (int r = 0; r < tp; ++r)
      for (int64_t i = 0; i < kCount; ++i) want[i] = std::max<double>(want[i], test::rank_value(r, i, 6));
    EXPECT_EQ(count_mismatches(buffer.to_double_vector(), want, 0, "max"), 0) << "tp " << tp;
  });
}

// Every rank draws the same full logits (B, T, Vp), keeps its columns, and must reproduce the
// fused cross-entropy's loss and its columns of the gradient. The vocabulary (V = 13) ends
// inside the last rank's columns, so the last ranks hold padding only or partly.
TEST(TensorParallelMappings, VocabParallelCrossEntropyEqualsTheFusedOne) {
  test::for_each_tp_comm(test::mpi_world(), [](Comm& group, int tp) {
      const int64_t Vp = 8 * tp, V = 13;
      Generator gen(21);
      Tensor full = Tensor::randn({3, 5, Vp}, gen, 0.0, 3.0);
      Tensor targets = test::random_ids({3, 5}, V, 22);
      targets.data<int32_t>()[4] = -1;
      Variable reference(full.clone(), true);
      Variable want = ops::cross_entropy(reference, targets, V);
      want.backward();
      const nn::ShardSpec columns{2, 1};
      Variable mine(nn::shard_of(full, columns, group.rank(), tp), true);
      Variable loss = vocab_parallel_cross_entropy(mine, targets, V, TensorParallel{&group});
      EXPECT_NEAR(loss.data().item(), want.data().item(), 1e-5 * std::fabs(want.data().item()));
      loss.backward();
      EXPECT_EQ(test::count_far_from_shard(mine.grad(), reference.grad(), columns, group.rank(), tp, 1e-7, 1e-5,
                                           "dlogits"),
                0);
  });
}

}  // namespace
}  // namespace nd::dist
