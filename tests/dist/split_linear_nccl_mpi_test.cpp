// The split (collective matmul) linears on NCCL under mpirun, one rank per GPU, native and ring
// collectives: gathered_linear (with and without its GELU) and scattered_linear forward and
// backward, unsplit and in 1, 2, 3 and 5 chunks, against the CPU ops on the whole tensors (f32);
// and the chunked forward captured into a CUDA graph (the comm stream forked and joined by events)
// whose replays equal the eager result. Skips where there is no GPU for each rank.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "dist/ring_comm.h"
#include "dist/sequence_parallel.h"
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

void check_gathered(const TensorParallel& tp, const ops::SplitCollectives& c, bool gelu) {
  const int R = tp.size();
  Variable x(rank_input(tp.rank(), kS * kK, DType::F32, 1, gpu()).view({kB, kTs, kK}), true);
  Variable w(rank_input(0, kN * kK, DType::F32, 2, gpu()).view({kN, kK}), true);
  Variable b(rank_input(0, kN, DType::F32, 3, gpu()), true);
  Variable y = ops::gathered_linear(x, w, b, c, gelu);
  y.backward(rank_input(tp.rank(), R * kS * kN, DType::F32, 4, gpu()).view({kB, R * kTs, kN}));
  // The CPU reference: this rank's seed for the weights' gradients, every rank's for x's.
  Variable ww(w.data().to(Device::cpu()), true), bw(b.data().to(Device::cpu()), true);
  auto reference = [&](const Variable& in) {
    Variable out = ops::linear(in, ww, bw);
    return gelu ? ops::gelu(out) : out;
  };
  Variable xw(whole_of(R, kS, kK, 1), true);
  Variable want = reference(xw);
  EXPECT_EQ(far(y.data(), want.data(), "y"), 0);
  want.backward(rank_input(tp.rank(), R * kS * kN, DType::F32, 4).view({R * kS, kN}));
  EXPECT_EQ(far(w.grad(), ww.grad(), "dw"), 0);
  EXPECT_EQ(far(b.grad(), bw.grad(), "db"), 0);
  Tensor dx_sum = Tensor::zeros({R * kS, kK});
  for (int q = 0; q < R; ++q) {
    Variable xq(whole_of(R, kS, kK, 1), true);
    reference(xq).backward(rank_input(q, R * kS * kN, DType::F32, 4).view({R * kS, kN}));
    for (int64_t i = 0; i < dx_sum.numel(); ++i) dx_sum.data<float>()[i] += xq.grad().data<float>()[i];
  }
  EXPECT_EQ(far(x.grad(), dx_sum.narrow(tp.rank() * kS, kS), "dx"), 0);
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
    Tensor sum = Tensor::zeros({R * kS, kN});
    for (int q = 0; q < R; ++q) {
      NoGradGuard values_only;
      Tensor part = ops::linear(Variable(rank_input(q, R * kS * kK, DType::F32, 5).view({R * kS, kK})),
                                Variable(rank_input(q, kN * kK, DType::F32, 6).view({kN, kK})), Variable())
                        .data();
      for (int64_t i = 0; i < sum.numel(); ++i) sum.data<float>()[i] += part.data<float>()[i];
    }
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
