// The split (collective matmul) linears on NCCL under mpirun, one rank per GPU, native and ring
// collectives: gathered_linear (with and without its GELU) and scattered_linear forward and
// backward, unsplit and in 1, 2, 3 and 5 chunks, against the CPU ops on the whole tensors (f64 for
// gathered_linear, whose GELU makes the gradients inexact sums); and the chunked forward captured
// into a CUDA graph (the comm stream forked and joined by events) whose replays equal the eager
// result. Skips where there is no GPU for each rank.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "dist/comm/ring_comm.h"
#include "dist/parallel/sequence_parallel.h"
#include "kernels/cpu/gelu.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#include "tests/dist/split_linear_inputs.h"
#include "tests/nn/tp_test_util.h"
#include "train/step_graph.h"

namespace nd::dist {
namespace {

using test::gpu_world;
using test::for_each_split;
using test::rank_input;
using test::whole_of;

// A share (B, Ts, K) = (2, 37, 64): S = 74 rows, which 3 and 5 chunks split unevenly; N = 96.
constexpr int64_t kB = 2, kTs = 37, kK = 64, kN = 96, kS = kB * kTs;
constexpr double kAtol = 1e-4, kRtol = 1e-4;

Device gpu() { return gpu_world().device(); }

int64_t far(const Tensor& got, const Tensor& want, const char* what) {
  return test::count_far(got.to(Device::cpu()).view({-1}), want.view({-1}), kAtol, kRtol, what);
}

// A sum of `terms` f32 products rounds by about sqrt(terms) u sum |product| (u = 2^-24) in any
// order, however small the sum itself: with the GELU the gradients are sums of terms of ~10^3 that
// cancel to ~0.1, where an rtol on the result alone would flag the GPU's rounding (rank 1's dw and
// dx did so, the same elements in every chunk count). Counts |got - want| > atol + rtol |want| +
// 4 sqrt(terms) u scale, with `scale` the sum of the magnitudes of the terms of each element.
int64_t far_from_sum(const Tensor& got, const Tensor& want, const std::vector<double>& scale, int64_t terms,
                     const char* what) {
  const std::vector<double> g = got.to(Device::cpu()).to_double_vector(), w = want.to_double_vector();
  EXPECT_EQ(g.size(), w.size()) << what;
  EXPECT_EQ(g.size(), scale.size()) << what;
  if (g.size() != w.size() || g.size() != scale.size()) return 1;
  const double per_scale = 4.0 * std::sqrt(static_cast<double>(terms)) * std::ldexp(1.0, -24);
  int64_t wrong = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::fabs(g[i] - w[i]) <= kAtol + kRtol * std::fabs(w[i]) + per_scale * scale[i]) continue;
    if (wrong < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", expected " << w[i] << " (terms of magnitude "
                    << scale[i] << ")";
    ++wrong;
  }
  return wrong;
}

// dpre (M, N) = dy * gelu'(pre), or dy without the GELU: the product's output gradient, f64.
Tensor product_gradient(const Tensor& pre, const Tensor& dy, bool gelu) {
  if (!gelu) return dy;
  Tensor dpre = Tensor::zeros(dy.shape(), DType::F64);
  cpu::gelu_backward(pre.data<double>(), dy.data<double>(), GradDest<double>{dpre.data<double>(), false}, dy.numel());
  return dpre;
}

void check_gathered(const TensorParallel& tp, const ops::SplitCollectives& c, bool gelu) {
  const int R = tp.size();
  const int64_t M = R * kS;
  Variable x(rank_input(tp.rank(), kS * kK, DType::F32, 1, gpu()).view({kB, kTs, kK}), true);
  Variable w(rank_input(0, kN * kK, DType::F32, 2, gpu()).view({kN, kK}), true);
  Variable b(rank_input(0, kN, DType::F32, 3, gpu()), true);
  Variable y = ops::gathered_linear(x, w, b, c, gelu);
  y.backward(rank_input(tp.rank(), M * kN, DType::F32, 4, gpu()).view({kB, R * kTs, kN}));
  // The CPU reference in f64: this rank's seed for the weights' gradients, every rank's for x's.
  const Tensor x64 = whole_of(R, kS, kK, 1).to(DType::F64);
  const Tensor w64 = w.data().to(Device::cpu()).to(DType::F64), b64 = b.data().to(Device::cpu()).to(DType::F64);
  auto dy_of = [&](int q) { return rank_input(q, M * kN, DType::F64, 4).view({M, kN}); };
  Variable ww(w64, true), bw(b64, true);
  Tensor pre;
  auto reference = [&](const Variable& in) {
    Variable out = ops::linear(in, ww, bw);
    pre = out.data();
    return gelu ? ops::gelu(out) : out;
  };
  Variable xw(x64, true);
  Variable want = reference(xw);
  EXPECT_EQ(far(y.data(), want.data(), "y"), 0);
  want.backward(dy_of(tp.rank()));
  // The magnitudes of the terms: dw[n, k] sums |dpre[m, n] x[m, k]| over m, db[n] |dpre[m, n]|.
  const Tensor dpre = product_gradient(pre, dy_of(tp.rank()), gelu);
  std::vector<double> dw_scale(kN * kK, 0.0), db_scale(kN, 0.0), dx_scale(M * kK, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < kN; ++n) {
      const double d = std::fabs(dpre.data<double>()[m * kN + n]);
      db_scale[n] += d;
      for (int64_t k = 0; k < kK; ++k) dw_scale[n * kK + k] += d * std::fabs(x64.data<double>()[m * kK + k]);
    }
  EXPECT_EQ(far_from_sum(w.grad(), ww.grad(), dw_scale, M, "dw"), 0);
  EXPECT_EQ(far_from_sum(b.grad(), bw.grad(), db_scale, M, "db"), 0);
  // x's: every rank's input gradient summed; dx[m, k] sums |dpre_q[m, n] w[n, k]| over n and q.
  Tensor dx_sum = Tensor::zeros({M, kK}, DType::F64);
  for (int q = 0; q < R; ++q) {
    Variable xq(x64, true);
    reference(xq).backward(dy_of(q));
    const Tensor dpre_q = product_gradient(pre, dy_of(q), gelu);
    for (int64_t i = 0; i < dx_sum.numel(); ++i) dx_sum.data<double>()[i] += xq.grad().data<double>()[i];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < kN; ++n)
        for (int64_t k = 0; k < kK; ++k)
          dx_scale[m * kK + k] += std::fabs(dpre_q.data<double>()[m * kN + n] * w64.data<double>()[n * kK + k]);
  }
  const std::vector<double> share_scale(dx_scale.begin() + tp.rank() * kS * kK,
                                        dx_scale.begin() + (tp.rank() + 1) * kS * kK);
  EXPECT_EQ(far_from_sum(x.grad(), dx_sum.narrow(tp.rank() * kS, kS), share_scale, R * kN, "dx"), 0);
}

TEST(SplitLinearNccl, GatheredLinearEqualsTheCpuProduct) {
  SKIP_WITHOUT_GPU();
  for_each_split(gpu_world(), [](const TensorParallel& tp, const ops::SplitCollectives& c) {
    check_gathered(tp, c, false);
    check_gathered(tp, c, true);
  });
}

TEST(SplitLinearNccl, ScatteredLinearEqualsTheCpuSum) {
  SKIP_WITHOUT_GPU();
  for_each_split(gpu_world(), [](const TensorParallel& tp, const ops::SplitCollectives& c) {
    const int R = tp.size();
    Variable x(rank_input(tp.rank(), R * kS * kK, DType::F32, 5, gpu()).view({kB, R * kTs, kK}), true);
    Variable w(rank_input(tp.rank(), kN * kK, DType::F32, 6, gpu()).view({kN, kK}), true);
    Variable y = ops::scattered_linear(x, w, c);
    y.backward(rank_input(tp.rank(), kS * kN, DType::F32, 7, gpu()).view({kB, kTs, kN}));
    Tensor sum = test::summed_partial_products(R, kS, kK, kN, 5, 6);
    EXPECT_EQ(far(y.data(), sum.narrow(tp.rank() * kS, kS), "y"), 0);
    Variable xw(x.data().to(Device::cpu()).view({R * kS, kK}), true), ww(w.data().to(Device::cpu()), true);
    ops::linear(xw, ww, Variable()).backward(whole_of(R, kS, kN, 7));
    EXPECT_EQ(far(x.grad(), xw.grad(), "dx"), 0);
    EXPECT_EQ(far(w.grad(), ww.grad(), "dw"), 0);
  });
}

// The chunked forward pair (gather + GEMMs, GEMMs + reduce-scatter) in bf16, captured after one
// eager run (which agrees the layouts and sizes the ring's staging): two replays equal the eager
// output bit for bit.
TEST(SplitLinearNccl, ChunkedForwardCapturesIntoAGraph) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  test::for_each_tp_comm(gpu_world(), [](Comm& group, int) {
    const TensorParallel tp{&group, true};
    const ops::SplitCollectives c = split_collectives(tp, 3);
    const int R = tp.size();
    Tensor x = rank_input(tp.rank(), kS * kK, DType::BF16, 8, gpu()).view({kB, kTs, kK});
    Tensor w1 = rank_input(tp.rank(), kN * kK, DType::BF16, 9, gpu()).view({kN, kK});
    Tensor w2 = rank_input(tp.rank(), kK * kN, DType::BF16, 10, gpu()).view({kK, kN});
    Tensor out = Tensor::zeros({kB, kTs, kK}, DType::BF16, gpu());
    auto step = [&] {
      NoGradGuard forward_only;
      Variable h = ops::gathered_linear(Variable(x), Variable(w1), Variable(), c, true);
      EXPECT_EQ(h.shape(), (Shape{kB, R * kTs, kN}));
      Variable y = ops::scattered_linear(h, Variable(w2), c);
      out.view({-1}).copy_from(y.data().view({-1}));
    };
    step();
    const std::vector<double> eager = out.to_double_vector();
    group.synchronize();
    train::StepGraph graph(gpu().index);
    std::string why;
    ASSERT_TRUE(graph.capture(step, &why)) << why;
    for (int replay = 0; replay < 2; ++replay) {
      out.zero_();
      graph.replay();
      EXPECT_EQ(out.to_double_vector(), eager) << "replay " << replay;
    }
  });
#endif
}

}  // namespace
}  // namespace nd::dist
