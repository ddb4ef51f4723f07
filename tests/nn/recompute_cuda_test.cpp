// Activation recomputation on the GPU: with dropout, over two accumulated micro-batches seeded the
// trainer's way (the loss told its seed), --recompute attention and block give the losses and every
// gradient of the recorded model to tolerance, in f32 and in bf16 (our attention kernel and, where
// this build and GPU have it, cuDNN's): the rerun draws the same Philox
// counters on the device, and the block's rerun, which skips the MLP's c_proj, its dropout and the
// residual add, still gives their gradients. With the linears in FP8 (fp8_gelu_mlp) block recomputation also leaves every delayed-scaling amax of x and w as none records it.
#include <cmath>

#include "dist/parallel/parallelize.h"
#include "kernels/cuda_test_util.h"
#include "kernels/cudnn/attention_cudnn.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/gpt.h"

namespace nd::test {
namespace {

nn::GPTConfig config_for(nn::Recompute mode, ops::AttentionKernel kernel) {
  nn::GPTConfig c;
  c.n_layer = 3;
  c.n_head = 2;
  c.n_embd = 128;  // head size 64: the tensor-core attention in bf16, and cuDNN's
  c.block_size = 64;
  c.vocab_size = 65;
  c.padded_vocab_size = 128;
  c.dropout = 0.1f;
  c.attention = kernel;
  c.recompute = mode;
  return c;
}

struct Run {
  std::vector<double> losses;
  nn::NamedParameters params;
  std::vector<std::pair<std::string, float>> amaxes;  // FP8 only: each quantised tensor's, after the step
};

Run train_micro_batches(nn::Recompute mode, DType dtype, ops::AttentionKernel kernel, uint64_t seed,
                        bool fp8 = false) {
  const nn::GPTConfig c = config_for(mode, kernel);
  Generator init(seed), dropout_gen(seed + 1), data(seed + 2);
  nn::GPT model(c, init, Device::cuda(0), dtype);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 4 * c.n_layer);
  if (fp8) dist::use_fp8(model, scaling, {/*attn=*/true, /*mlp=*/true, /*head=*/false});
  const Tensor seed_grad = Tensor::full(Shape{}, 0.5, ops::loss_dtype(dtype), Device::cuda(0));
  const ops::LossGradient told{seed_grad, true};
  Run r;
  for (int micro = 0; micro < 2; ++micro) {
    std::vector<int32_t> idx(2 * 64), targets(2 * 64);
    for (size_t i = 0; i < idx.size(); ++i) {
      idx[i] = static_cast<int32_t>(data.next_u64() % c.vocab_size);
      targets[i] = static_cast<int32_t>(data.next_u64() % c.vocab_size);
    }
    Tensor idx_d = Tensor::from_vector(idx, {2, 64}).to(Device::cuda(0));
    Tensor targets_d = Tensor::from_vector(targets, {2, 64}).to(Device::cuda(0));
    nn::GPT::Output out = model.forward(idx_d, &targets_d, dropout_gen, &told);
    out.loss.backward(seed_grad);
    r.losses.push_back(out.loss.data().item());
  }
  r.params = model.named_parameters();
  if (fp8) {
    scaling.end_step(nullptr);  // the step's amaxes join the histories
    const nn::DelayedScaling& histories = scaling.scaling();
    for (int i = 0; i < histories.size(); ++i) {
      const std::vector<float> history = histories.tensor(i).history.oldest_first();  // empty: not finite
      r.amaxes.push_back({histories.tensor(i).name, history.empty() ? std::nanf("") : history.back()});
    }
  }
  return r;
}

void check_modes(DType dtype, ops::AttentionKernel kernel, double tol, bool fp8 = false) {
  const uint64_t seed = test_seed();
  const Run want = train_micro_batches(nn::Recompute::None, dtype, kernel, seed, fp8);
  for (nn::Recompute mode : {nn::Recompute::Attention, nn::Recompute::Block}) {
    const std::string what = std::string(dtype_name(dtype)) + (fp8 ? " fp8" : "") +
                             (kernel == ops::AttentionKernel::Cudnn ? " cudnn " : " ours ") +
                             (mode == nn::Recompute::Attention ? "attention" : "block");
    const Run got = train_micro_batches(mode, dtype, kernel, seed, fp8);
    // The forward's values, and so the amaxes of x and w, are the same whatever is recomputed (a
    // rerun's quantise folds the maximum of the same values again); the gradients' to tolerance.
    ASSERT_EQ(got.amaxes.size(), want.amaxes.size());
    for (size_t i = 0; i < want.amaxes.size(); ++i) {
      const auto& [name, amax] = want.amaxes[i];
      EXPECT_EQ(got.amaxes[i].first, name);
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".dout") == 0)
        EXPECT_NEAR(got.amaxes[i].second, amax, tol * amax) << what << " amax of " << name;
      else
        EXPECT_EQ(got.amaxes[i].second, amax) << what << " amax of " << name;
    }
    for (size_t m = 0; m < want.losses.size(); ++m)
      EXPECT_NEAR(got.losses[m], want.losses[m], tol * std::abs(want.losses[m])) << what << " loss " << m;
    ASSERT_EQ(got.params.size(), want.params.size());
    for (size_t i = 0; i < want.params.size(); ++i)
      expect_close(got.params[i].second.grad(), want.params[i].second.grad(), tol, tol,
                   what + " grad of " + want.params[i].first);
  }
}

TEST(RecomputeCuda, F32MatchesNone) {
  ND_SKIP_WITHOUT_GPU();
  check_modes(DType::F32, ops::AttentionKernel::Ours, 1e-5);
}

TEST(RecomputeCuda, Bf16MatchesNone) {
  ND_SKIP_WITHOUT_GPU();
  check_modes(DType::BF16, ops::AttentionKernel::Ours, 1e-2);
}

TEST(RecomputeCuda, Fp8MatchesNoneWithTheSameAmaxes) {
  ND_SKIP_WITHOUT_GPU();
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  check_modes(DType::BF16, ops::AttentionKernel::Ours, 2e-2, /*fp8=*/true);
}

TEST(RecomputeCuda, Bf16CudnnAttentionMatchesNone) {
  ND_SKIP_WITHOUT_GPU();
  std::string why;
  if (!cudnn::attention_available(&why)) GTEST_SKIP() << why;
  check_modes(DType::BF16, ops::AttentionKernel::Cudnn, 1e-2);
}

}  // namespace
}  // namespace nd::test
