// The split (collective matmul) linears of sequence parallelism under mpirun, for every tp that
// divides the world, native and ring collectives, unsplit and in 1, 2, 3 and 5 chunks (5 does not
// divide the share's rows): gathered_linear (also with its GELU) and scattered_linear forward and
// backward (scattered_linear also with its bias) against ops::linear (and ops::gelu) on the whole
// tensors, each rank rebuilding every rank's rank-dependent inputs.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "dist/parallel/sequence_parallel.h"
#include "dist/comm/world.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/split_linear_inputs.h"
#include "tests/nn/tp_test_util.h"

namespace nd::dist {
namespace {

using test::for_each_split;
using test::rank_input;
using test::whole_of;

// A share (B, Ts, K) = (2, 3, 5): S = 6 tokens, the whole (2, 3 tp, 5) of 6 tp tokens in order (rank
// r's share = tokens [6 r, 6 r + 6)); N = 4 output features.
constexpr int64_t kB = 2, kTs = 3, kK = 5, kN = 4, kS = kB * kTs;
constexpr double kAtol = 1e-5, kRtol = 1e-5;

Tensor sum_of_blocks(int tp, int64_t rows, int64_t cols, uint64_t seed) {
  Tensor sum = Tensor::zeros({tp * rows, cols});
  float* s = sum.data<float>();
  for (int r = 0; r < tp; ++r) {
    Tensor g = rank_input(r, tp * rows * cols, DType::F32, seed);
    for (int64_t i = 0; i < sum.numel(); ++i) s[i] += g.data<float>()[i];
  }
  return sum;
}

int64_t far(const Tensor& got, const Tensor& want, const char* what) {
  return test::count_far(got.view({-1}), want.view({-1}), kAtol, kRtol, what);
}

TEST(SplitLinear, GatheredLinearEqualsTheLinearOfTheGatheredInput) {
  for_each_split(test::mpi_world(), [](const TensorParallel& tp, const ops::SplitCollectives& c) {
    const int R = tp.size();
    Variable x(rank_input(tp.rank(), kS * kK, DType::F32, 1).view({kB, kTs, kK}), true);
    Variable w(rank_input(0, kN * kK, DType::F32, 2).view({kN, kK}), true);
    Variable b(rank_input(0, kN, DType::F32, 3), true);
    Variable y = ops::gathered_linear(x, w, b, c);
    ASSERT_EQ(y.shape(), (Shape{kB, R * kTs, kN}));
    // The reference: ops::linear of the whole input (block r = rank r's share).
    Variable xw(whole_of(R, kS, kK, 1), true), ww(w.data().clone(), true), bw(b.data().clone(), true);
    Variable want = ops::linear(xw, ww, bw);
    EXPECT_EQ(far(y.data(), want.data(), "y"), 0);
    // Rank r seeds its own gradient: its weights' gradients are its own; x's is block rank() of
    // the sum of every rank's input gradient.
    y.backward(rank_input(tp.rank(), R * kS * kN, DType::F32, 4).view({kB, R * kTs, kN}));
    want.backward(rank_input(tp.rank(), R * kS * kN, DType::F32, 4).view({R * kS, kN}));
    EXPECT_EQ(far(w.grad(), ww.grad(), "dw"), 0);
    EXPECT_EQ(far(b.grad(), bw.grad(), "db"), 0);
    Variable xs(whole_of(R, kS, kK, 1), true);
    ops::linear(xs, ww, bw).backward(sum_of_blocks(R, kS, kN, 4));
    EXPECT_EQ(far(x.grad(), xs.grad().narrow(tp.rank() * kS, kS), "dx"), 0);
  });
}

TEST(SplitLinear, GatheredLinearWithGeluEqualsGeluOfTheLinear) {
  for_each_split(test::mpi_world(), [](const TensorParallel& tp, const ops::SplitCollectives& c) {
    const int R = tp.size();
    Variable x(rank_input(tp.rank(), kS * kK, DType::F32, 11).view({kB, kTs, kK}), true);
    Variable w(rank_input(0, kN * kK, DType::F32, 12).view({kN, kK}), true);
    Variable b(rank_input(0, kN, DType::F32, 13), true);
    Variable y = ops::gathered_linear(x, w, b, c, /*gelu=*/true);
    Variable xw(whole_of(R, kS, kK, 11), true), ww(w.data().clone(), true), bw(b.data().clone(), true);
    Variable want = ops::gelu(ops::linear(xw, ww, bw));
    EXPECT_EQ(far(y.data(), want.data(), "y"), 0);
    y.backward(rank_input(tp.rank(), R * kS * kN, DType::F32, 14).view({kB, R * kTs, kN}));
    want.backward(rank_input(tp.rank(), R * kS * kN, DType::F32, 14).view({R * kS, kN}));
    EXPECT_EQ(far(w.grad(), ww.grad(), "dw"), 0);
    EXPECT_EQ(far(b.grad(), bw.grad(), "db"), 0);
    Variable ws(w.data().clone(), true), bs(b.data().clone(), true);
    // x's gradient: block rank() of the sum over ranks of each rank's input gradient.
    Tensor dx_sum = Tensor::zeros({R * kS, kK});
    for (int q = 0; q < R; ++q) {
      Variable xq(whole_of(R, kS, kK, 11), true);
      ops::gelu(ops::linear(xq, ws, bs)).backward(rank_input(q, R * kS * kN, DType::F32, 14).view({R * kS, kN}));
      for (int64_t i = 0; i < dx_sum.numel(); ++i) dx_sum.data<float>()[i] += xq.grad().data<float>()[i];
    }
    EXPECT_EQ(far(x.grad(), dx_sum.narrow(tp.rank() * kS, kS), "dx"), 0);
  });
}

TEST(SplitLinear, ScatteredLinearEqualsTheShareOfTheSummedProducts) {
  for_each_split(test::mpi_world(), [](const TensorParallel& tp, const ops::SplitCollectives& c) {
    const int R = tp.size();
    Variable x(rank_input(tp.rank(), R * kS * kK, DType::F32, 5).view({kB, R * kTs, kK}), true);
    Variable w(rank_input(tp.rank(), kN * kK, DType::F32, 6).view({kN, kK}), true);
    Variable y = ops::scattered_linear(x, w, c);
    ASSERT_EQ(y.shape(), (Shape{kB, kTs, kN}));
    // The reference: every rank's partial product, summed, block rank().
    Tensor sum = test::summed_partial_products(R, kS, kK, kN, 5, 6);
    EXPECT_EQ(far(y.data(), sum.narrow(tp.rank() * kS, kS), "y"), 0);
    // Backward: the output gradient gathered over the group (block r = rank r's seed).
    y.backward(rank_input(tp.rank(), kS * kN, DType::F32, 7).view({kB, kTs, kN}));
    Variable xw(x.data().view({R * kS, kK}).clone(), true), ww(w.data().clone(), true);
    ops::linear(xw, ww, Variable()).backward(whole_of(R, kS, kN, 7));
    EXPECT_EQ(far(x.grad(), xw.grad(), "dx"), 0);
    EXPECT_EQ(far(w.grad(), ww.grad(), "dw"), 0);
  });
}

// With a bias: the share of the summed products plus the bias once (it rides in rank 0's products),
// and the bias gradient of each rank is the column sums of its own share's output gradient (the
// part dist::sum_gradients_over_tp adds up over the group); x's and w's gradients as without it.
TEST(SplitLinear, ScatteredLinearWithBiasAddsItOnce) {
  for_each_split(test::mpi_world(), [](const TensorParallel& tp, const ops::SplitCollectives& c) {
    const int R = tp.size();
    Variable x(rank_input(tp.rank(), R * kS * kK, DType::F32, 15).view({kB, R * kTs, kK}), true);
    Variable w(rank_input(tp.rank(), kN * kK, DType::F32, 16).view({kN, kK}), true);
    Variable b(rank_input(0, kN, DType::F32, 17), true);
    Variable y = ops::scattered_linear(x, w, c, b);
    Tensor want = test::summed_partial_products(R, kS, kK, kN, 15, 16);
    for (int64_t i = 0; i < want.numel(); ++i) want.data<float>()[i] += b.data().data<float>()[i % kN];
    EXPECT_EQ(far(y.data(), want.narrow(tp.rank() * kS, kS), "y"), 0);
    const Tensor dshare = rank_input(tp.rank(), kS * kN, DType::F32, 18).view({kB, kTs, kN});
    y.backward(dshare);
    Tensor db = Tensor::zeros({kN});
    for (int64_t i = 0; i < dshare.numel(); ++i) db.data<float>()[i % kN] += dshare.data<float>()[i];
    EXPECT_EQ(far(b.grad(), db, "db"), 0);
    Variable xw(x.data().view({R * kS, kK}).clone(), true), ww(w.data().clone(), true);
    ops::linear(xw, ww, Variable()).backward(whole_of(R, kS, kN, 18));
    EXPECT_EQ(far(x.grad(), xw.grad(), "dx"), 0);
    EXPECT_EQ(far(w.grad(), ww.grad(), "dw"), 0);
  });
}

}  // namespace
}  // namespace nd::dist
