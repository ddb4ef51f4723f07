// FP8 linears under tensor parallelism on NCCL (mpirun -np 2, 3 or 4, one GPU per rank of compute
// capability 8.9+; skipped otherwise), with and without sequence parallelism, against the tp = 1
// GPT in FP8 drawn from the same seed on the same GPU, every linear and the tied head in FP8, over
// three batches (forward, backward and the scales' update each, the weights unchanged):
//   - every quantised tensor's scale is the same on every rank of the group: each rank quantises
//     its shard with one scale, agreed over the group where the tensor is split;
//   - every weight's scale equals the tp = 1 model's bit for bit (the max over the shards is the
//     whole weight's amax: the split model holds the same bf16 values);
//   - the loss and the gathered gradients follow the tp = 1 model's to FP8's tolerance (below).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <string>

#include "dist/comm/world.h"
#include "dist/parallel/parallelize.h"
#include "dist/parallel/sequence_parallel.h"
#include "dist/parallel/tensor_shard.h"
#include "kernels/cuda_test_util.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/gpt.h"
#include "tests/dist/nccl_test_world.h"
#include "tests/nn/tp_test_util.h"

namespace nd::nn {
namespace {

using dist::TensorParallel;

constexpr int64_t kBatch = 4, kTokens = 16;  // 64 tokens: the FP8 GEMMs' rows, a multiple of 16
constexpr int kSteps = 3;

// The split model differs from the tp = 1 one only where a sum is split over the group (the
// row-parallel products and the column-parallel input gradients, each rounded to bf16 per rank
// before the sum): a one-ulp bf16 change that moves a value across an FP8 rounding boundary changes
// its code by one step (1/8 of it in E4M3, 1/4 in E5M2), which a few percent of the values do. That
// moves a loss of ~4 by far less than 1%, and a gradient by a few percent of its norm; a missing
// reduction or a wrong shard moves a gradient by tens of percent.
constexpr double kLossTolerance = 1e-2;      // relative
constexpr double kGradientTolerance = 0.1;   // |gathered - tp 1| <= this x |tp 1| (norms, per tensor)

// Widths every tp of 2, 3 and 4 splits into FP8-aligned shards: 192 / tp is a multiple of 16.
GPTConfig fp8_config(int tp) {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 12;
  c.n_embd = 192;
  c.block_size = kTokens;
  c.vocab_size = 65;
  c.padded_vocab_size = padded_vocab_rows(c.vocab_size, tp, true);
  return c;
}

struct Fp8Gpt {
  std::unique_ptr<GPT> model;
  std::unique_ptr<Fp8LinearScaling> scaling;
};

// The bf16 GPT of `c` under `tp` (tp = 1: the plain model) with every linear and the head in FP8.
Fp8Gpt fp8_gpt(const GPTConfig& c, const TensorParallel& tp) {
  Generator gen(3);
  Fp8Gpt g;
  g.model = dist::parallelize(c, gen, test::gpu_world().device(), DType::BF16, {tp, {}});
  g.scaling = std::make_unique<Fp8LinearScaling>(g.model->device(), 4 * c.n_layer + 1);
  dist::use_fp8(*g.model, *g.scaling, {/*attn=*/true, /*mlp=*/true, /*head=*/true});
  return g;
}

// One batch forward and backward, the replicated gradients summed under sequence parallelism, and
// the step's amaxes turned into the next scales (agreed over the group); the loss.
double run_batch(Fp8Gpt& g, const TensorParallel& tp, int batch) {
  const GPTConfig& c = g.model->config();
  const Device gpu = g.model->device();
  g.model->zero_grad();
  Tensor idx = test::random_ids({kBatch, kTokens}, c.vocab_size, 10 + batch).to(gpu);
  Tensor targets = test::random_ids({kBatch, kTokens}, c.vocab_size, 20 + batch).to(gpu);
  Generator dropout(9);
  GPT::Output out = g.model->forward(idx, &targets, dropout);
  out.loss.backward();
  if (tp.active()) dist::sum_sequence_parallel_gradients(*g.model, tp);
  g.scaling->end_step(dist::max_over(tp.comm));
  return out.loss.data().item();
}

// True when `value` is the same on every rank of `comm`.
bool same_on_all(double value, dist::Comm& comm) {
  double both[2] = {value, -value};
  comm.host_allreduce(both, 2, dist::HostReduce::Max);
  return both[0] == -both[1];
}

double norm(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

void expect_scales_agree(const Fp8Gpt& split, const Fp8Gpt& full, dist::Comm& group) {
  const DelayedScaling& got = split.scaling->scaling();
  const DelayedScaling& want = full.scaling->scaling();
  ASSERT_EQ(got.size(), want.size());
  for (int t = 0; t < got.size(); ++t) {
    const Fp8TensorScaling& s = got.tensor(t);
    ASSERT_EQ(s.name, want.tensor(t).name);
    EXPECT_TRUE(same_on_all(s.scale, group)) << s.name << ": the ranks quantise with other scales";
    if (s.name.size() > 2 && s.name.compare(s.name.size() - 2, 2, ".w") == 0) {
      EXPECT_EQ(s.scale, want.tensor(t).scale) << s.name << ": not the whole weight's scale";
    }
  }
}

void expect_gradients_follow(const TensorParallel& tp, const GPT& split, const GPT& full) {
  const NamedParameters sp = split.named_parameters(), fp = full.named_parameters();
  const NamedParamInfos infos = split.named_param_infos();
  ASSERT_EQ(sp.size(), fp.size());
  for (size_t i = 0; i < sp.size(); ++i) {
    const std::vector<double> got =
        dist::gather_full_tensor(*tp.comm, sp[i].second.grad(), infos[i].second.split).to_double_vector();
    const std::vector<double> want = fp[i].second.grad().to_double_vector();
    ASSERT_EQ(got.size(), want.size()) << fp[i].first;
    std::vector<double> diff(got.size());
    for (size_t k = 0; k < got.size(); ++k) diff[k] = got[k] - want[k];
    EXPECT_LE(norm(diff), kGradientTolerance * norm(want)) << fp[i].first << " gradient";
  }
}

void check_against_tp1(const TensorParallel& tp) {
  const GPTConfig c = fp8_config(tp.size());
  Fp8Gpt full = fp8_gpt(c, TensorParallel{});
  Fp8Gpt split = fp8_gpt(c, tp);
  for (int batch = 0; batch < kSteps; ++batch) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const double want = run_batch(full, TensorParallel{}, batch);
    const double got = run_batch(split, tp, batch);
    EXPECT_NEAR(got, want, kLossTolerance * want);
    EXPECT_TRUE(same_on_all(got, *tp.comm)) << "the ranks computed other losses";
    expect_scales_agree(split, full, *tp.comm);
    if (batch == kSteps - 1) expect_gradients_follow(tp, *split.model, *full.model);
  }
}

#if NANODIST_WITH_CUDA
#define SKIP_WITHOUT_FP8_GPUS()                                                                      \
  SKIP_WITHOUT_GPU();                                                                                \
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later"
#else
#define SKIP_WITHOUT_FP8_GPUS() GTEST_SKIP() << "built without CUDA"
#endif

TEST(Fp8TensorParallelNccl, FollowsTheOneRankModel) {
  SKIP_WITHOUT_FP8_GPUS();
  test::for_each_tp_group(test::gpu_world(), [](const TensorParallel& tp) { check_against_tp1(tp); });
}

TEST(Fp8TensorParallelNccl, SequenceParallelFollowsTheOneRankModel) {
  SKIP_WITHOUT_FP8_GPUS();
  test::for_each_tp_group(
      test::gpu_world(),
      [](const TensorParallel& tp) {
        if (kTokens % tp.size() != 0) return;  // sequence parallelism splits the 16 positions
        check_against_tp1(tp);
      },
      /*sequence_parallel=*/true);
}

}  // namespace
}  // namespace nd::nn
