// Sequence parallelism's mappings under mpirun, for every tp that divides the world (the grid's
// groups), with the native and the ring-decorated collectives: all_gather_from_sp and
// reduce_scatter_to_sp forward and backward against closed-form concatenations and sums of
// rank-dependent inputs; token_dropout against the whole tensor's dropout; and the flat gradient sum.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "dist/parallel/sequence_parallel.h"
#include "dist/comm/world.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/dist/collective_inputs.h"
#include "tests/nn/tp_test_util.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rank_value;
using test::sum_over_ranks;

// A share is (kRows, 3, 5): 30 elements, an odd row length so blocks are not padded to anything.
constexpr int64_t kRows = 2, kShare = kRows * 3 * 5;

// Runs check(tp) for every tp group with sequence parallelism on, native and ring.
template <typename Check>
void for_each_sp_group(Check check) {
  test::for_each_tp_group(test::mpi_world(), check, /*sequence_parallel=*/true);
}

// Block r of the whole's tokens is rank r's rank_input(seed): the concatenation over ranks.
std::vector<double> concatenated(int tp, uint64_t seed) {
  std::vector<double> out;
  for (int r = 0; r < tp; ++r)
    for (int64_t i = 0; i < kShare; ++i) out.push_back(rank_value(r, i, seed));
  return out;
}

TEST(SequenceParallelMappings, AllGatherConcatenatesAndReduceScattersTheGradient) {
  for_each_sp_group([](const TensorParallel& tp) {
    Variable x(rank_input(tp.rank(), kShare, DType::F32, 1).view({kRows, 3, 5}), true);
    Variable y = all_gather_from_sp(x, tp);
    EXPECT_EQ(y.shape(), (Shape{kRows, 3 * tp.size(), 5}));
    EXPECT_EQ(count_mismatches(y.data().to_double_vector(), concatenated(tp.size(), 1), 0, "y"), 0);
    // Rank r's gradient of the whole is rank_input(r, seed 2); x gets block rank() summed.
    y.backward(rank_input(tp.rank(), kShare * tp.size(), DType::F32, 2).view({kRows, 3 * tp.size(), 5}));
    EXPECT_EQ(count_mismatches(x.grad().to_double_vector(), sum_over_ranks(tp.size(), kShare, 2, tp.rank() * kShare),
                               0, "dx"),
              0);
  });
}

TEST(SequenceParallelMappings, ReduceScatterSumsTheShareAndAllGathersTheGradient) {
  for_each_sp_group([](const TensorParallel& tp) {
    Variable w(rank_input(tp.rank(), kShare * tp.size(), DType::F32, 3).view({kRows, 3 * tp.size(), 5}), true);
    Variable partial = ops::add(w, Variable(Tensor::zeros(w.shape())));
    const std::vector<double> before = partial.data().to_double_vector();
    Variable y = reduce_scatter_to_sp(partial, tp);
    EXPECT_EQ(partial.data().to_double_vector(), before) << "the reduce-scatter changed its input";
    EXPECT_EQ(y.shape(), (Shape{kRows, 3, 5}));
    EXPECT_EQ(count_mismatches(y.data().to_double_vector(), sum_over_ranks(tp.size(), kShare, 3, tp.rank() * kShare),
                               0, "y"),
              0);
    y.backward(rank_input(tp.rank(), kShare, DType::F32, 4).view({kRows, 3, 5}));
    EXPECT_EQ(count_mismatches(w.grad().to_double_vector(), concatenated(tp.size(), 4), 0, "dw"), 0);
  });
}

TEST(SequenceParallelMappings, TokensNotDividedByTpAreAnError) {
  for_each_sp_group([](const TensorParallel& tp) {
    Variable partial = ops::add(Variable(Tensor::ones({tp.size() + 1, 2})), Variable(Tensor::ones({tp.size() + 1, 2})));
    try {
      reduce_scatter_to_sp(partial, tp);
      ADD_FAILURE() << "no error for " << tp.size() + 1 << " tokens";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not divide the tokens"), std::string::npos) << e.what();
    }
  });
}

TEST(SequenceParallelMappings, WithoutSequenceParallelismTheyAreIdentities) {
  ParallelGrid grid(test::mpi_world(), test::mpi_world().size());
  Variable x(rank_input(0, kShare, DType::F32, 5), true);
  const TensorParallel plain_tp{&grid.tp()};
  EXPECT_TRUE(all_gather_from_sp(x, plain_tp).same(x));
  EXPECT_TRUE(reduce_scatter_to_sp(x, plain_tp).same(x));
  const TensorParallel one_rank{nullptr, true};
  EXPECT_TRUE(all_gather_from_sp(x, one_rank).same(x));
  EXPECT_TRUE(reduce_scatter_to_sp(x, one_rank).same(x));
}

// The share's mask is the whole tensor's mask in its tokens (a contiguous range of the flattened
// whole), and every rank's generator moves on by the whole tensor's counters, as at tp = 1.
TEST(SequenceParallelMappings, TokenDropoutDropsWhatTheWholeBatchDrops) {
  for_each_sp_group([](const TensorParallel& tp) {
    Tensor whole = Tensor::ones({kRows * tp.size(), 3, 5});
    Generator whole_gen(11), share_gen(11);
    whole_gen.advance(7);
    share_gen.advance(7);
    Tensor want = ops::dropout(Variable(whole), 0.5f, whole_gen, true).data();
    Tensor share = whole.narrow(tp.rank() * kRows, kRows).clone();
    Tensor got = token_dropout(Variable(share), 0.5f, share_gen, true, tp).data();
    EXPECT_EQ(got.to_double_vector(), want.narrow(tp.rank() * kRows, kRows).to_double_vector());
    EXPECT_EQ(share_gen.offset(), whole_gen.offset());
  });
}

TEST(SequenceParallelMappings, GradientSumCoversEveryParameter) {
  for_each_sp_group([](const TensorParallel& tp) {
    Variable a(Tensor::zeros({3, 4}), true), b(Tensor::zeros({5}), true), unused(Tensor::zeros({2}), true);
    a.set_grad(rank_input(tp.rank(), 12, DType::F32, 8).view({3, 4}));
    b.set_grad(rank_input(tp.rank(), 5, DType::F32, 9));
    sum_gradients_over_tp({a, unused, b}, tp);
    EXPECT_EQ(count_mismatches(a.grad().to_double_vector(), sum_over_ranks(tp.size(), 12, 8), 0, "a"), 0);
    EXPECT_EQ(count_mismatches(b.grad().to_double_vector(), sum_over_ranks(tp.size(), 5, 9), 0, "b"), 0);
    EXPECT_FALSE(unused.has_grad());
  });
}

}  // namespace
}  // namespace nd::dist
