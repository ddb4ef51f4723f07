// Activation recomputation on the GPU: with dropout, over two accumulated micro-batches seeded the
// trainer's way (the loss told its seed), --recompute attention and block give the losses and every
// gradient of the recorded model to tolerance, in f32 and in bf16 (our attention kernel and, where
// this build and GPU have it, cuDNN's): the rerun draws the same Philox counters on the device.
#include "kernels/cuda_test_util.h"
#include "kernels/cudnn/attention_cudnn.h"
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
};

Run train_micro_batches(nn::Recompute mode, DType dtype, ops::AttentionKernel kernel, uint64_t seed) {
  const nn::GPTConfig c = config_for(mode, kernel);
  Generator init(seed), dropout_gen(seed + 1), data(seed + 2);
  nn::GPT model(c, init, Device::cuda(0), dtype);
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
  return r;
}

void check_modes(DType dtype, ops::AttentionKernel kernel, double tol) {
  const uint64_t seed = fresh_seed();
  const Run want = train_micro_batches(nn::Recompute::None, dtype, kernel, seed);
  for (nn::Recompute mode : {nn::Recompute::Attention, nn::Recompute::Block}) {
    const std::string what = std::string(dtype_name(dtype)) +
                             (kernel == ops::AttentionKernel::Cudnn ? " cudnn " : " ours ") +
                             (mode == nn::Recompute::Attention ? "attention" : "block");
    const Run got = train_micro_batches(mode, dtype, kernel, seed);
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

TEST(RecomputeCuda, Bf16CudnnAttentionMatchesNone) {
  ND_SKIP_WITHOUT_GPU();
  std::string why;
  if (!cudnn::attention_available(&why)) GTEST_SKIP() << why;
  check_modes(DType::BF16, ops::AttentionKernel::Cudnn, 1e-2);
}

}  // namespace
}  // namespace nd::test
