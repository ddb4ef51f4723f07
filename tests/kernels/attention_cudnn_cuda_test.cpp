// cuDNN's fused attention (ops::attention with AttentionKernel::Cudnn) in bf16: output and dqkv
// against the CPU reference kernel (overwriting and accumulating into dqkv), its saved log-sum-exp
// against our CUDA kernel's, a tiny GPT's loss against our kernel's, and dropout: with v the
// identity the output reveals the dropped probabilities, from which the test computes dq, dk, dv
// in f64 (so forward and backward must drop the same elements). Skips without a GPU or cuDNN.
#include "autograd/ops.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda_test_util.h"
#include "kernels/cudnn/attention_cudnn.h"
#include "nn/gpt.h"

namespace nd::test {
namespace {

#define ND_SKIP_WITHOUT_CUDNN()                                                         \
  ND_SKIP_WITHOUT_GPU();                                                                \
  do {                                                                                  \
    std::string nd_why_;                                                                \
    if (!::nd::cudnn::attention_available(&nd_why_)) GTEST_SKIP() << nd_why_;           \
  } while (0)

using ops::AttentionKernel;

// cuDNN on the GPU, the reference kernel on the CPU (f32 from the same bf16-rounded inputs).
void check_against_cpu(int64_t B, int64_t T, int64_t NH, int64_t hs, bool seed_grads) {
  Generator gen(test_seed());
  auto op = [NH](const std::vector<Variable>& v, Device device) {
    return ops::attention(v[0], static_cast<int>(NH), 0.0f, nullptr, true, 0, 0,
                          device.is_cuda() ? AttentionKernel::Cudnn : AttentionKernel::Ours);
  };
  check_op_against_cpu(op, {random_input({B, T, 3 * NH * hs}, gen, DType::BF16)}, {true}, DType::BF16, gen,
                       "cudnn attention B=" + std::to_string(B) + " T=" + std::to_string(T) +
                           " NH=" + std::to_string(NH) + " hs=" + std::to_string(hs) +
                           (seed_grads ? " (accumulating)" : ""),
                       seed_grads);
}

TEST(AttentionCudnnCuda, MatchesCpuReference) {
  ND_SKIP_WITHOUT_CUDNN();
  for (bool seed_grads : {false, true}) {
    check_against_cpu(2, 64, 2, 64, seed_grads);
    check_against_cpu(1, 128, 3, 64, seed_grads);
    check_against_cpu(2, 37, 2, 64, seed_grads);
    check_against_cpu(1, 150, 2, 128, seed_grads);
    check_against_cpu(2, 33, 2, 32, seed_grads);
  }
}

// The log-sum-exp each saves for its backward is the same quantity.
TEST(AttentionCudnnCuda, LogSumExpMatchesOurKernel) {
  ND_SKIP_WITHOUT_CUDNN();
  Generator gen(test_seed());
  const int64_t B = 2, T = 96, NH = 2, hs = 64, C = NH * hs;
  Tensor qkv = on_gpu(random_input({B, T, 3 * C}, gen, DType::BF16), DType::BF16);
  Tensor out[2], lse[2];
  for (int k = 0; k < 2; ++k) {
    out[k] = Tensor::empty({B, T, C}, DType::BF16, Device::cuda(0));
    lse[k] = Tensor::empty({B, NH, T}, DType::F32, Device::cuda(0));
  }
  cuda::attention_forward(qkv.data<bf16>(), out[0].data<bf16>(), lse[0].data<float>(), B, T, C, NH);
  cudnn::attention_forward(qkv.data<bf16>(), out[1].data<bf16>(), lse[1].data<float>(), B, T, C, NH);
  expect_close(lse[1], lse[0], 1e-4, 1e-4, "cudnn lse vs ours");
  expect_close(out[1], out[0], 1e-2, 1e-2, "cudnn out vs ours");
}

// Softmax probabilities P (B, NH, T, T) in f64 of the causal scores q kᵀ / sqrt(hs), from qkv (B, T, 3C).
std::vector<double> probabilities(const std::vector<double>& qkv, int64_t B, int64_t T, int64_t NH, int64_t hs) {
  const int64_t C = NH * hs;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> P(B * NH * T * T, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i) {
        double* row = &P[((b * NH + h) * T + i) * T];
        double mx = -1e300;
        for (int64_t j = 0; j <= i; ++j) {
          double s = 0;
          for (int64_t d = 0; d < hs; ++d)
            s += qkv[(b * T + i) * 3 * C + h * hs + d] * qkv[(b * T + j) * 3 * C + C + h * hs + d];
          row[j] = s * scale;
          mx = std::max(mx, row[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j <= i; ++j) sum += (row[j] = std::exp(row[j] - mx));
        for (int64_t j = 0; j <= i; ++j) row[j] /= sum;
      }
  return P;
}

// Dropout, seen through v = identity (T <= hs): out[b, i, h*hs + j] = D[b, h, i, j], the kept
// probabilities scaled by 1 / (1 - p), 0 where dropped. Checks that D is P or 0 elementwise, that
// about p of the elements are dropped, and dq, dk, dv against the f64 formulas of dropout attention:
// dv = Dᵀ dout, dP = dout vᵀ, dS = D ∘ dP - P ∘ rowsum(D ∘ dP), dq = dS k / sqrt(hs), dk = dSᵀ q / sqrt(hs).
TEST(AttentionCudnnCuda, DropoutMaskIsSharedByForwardAndBackward) {
  ND_SKIP_WITHOUT_CUDNN();
  Generator gen(test_seed());
  const int64_t B = 2, T = 48, NH = 2, hs = 64, C = NH * hs;
  const float p = 0.25f;
  // Small q and k: probabilities near 1 / (i + 1), far above bf16's resolution.
  Tensor qkv_cpu = random_input({B, T, 3 * C}, gen, DType::BF16, 0.3);
  std::vector<double> x = qkv_cpu.to_double_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < NH; ++h)
        for (int64_t d = 0; d < hs; ++d) x[(b * T + t) * 3 * C + 2 * C + h * hs + d] = t == d ? 1.0 : 0.0;
  Tensor qkv_in = Tensor::from_vector(x, {B, T, 3 * C}).to(DType::BF16);
  const uint64_t mask_seed = gen.next_u64();
  auto run = [&](uint64_t offset, Tensor* dqkv) {
    Variable qkv(qkv_in.to(Device::cuda(0)), true);
    Generator mask_gen(mask_seed, 3);
    mask_gen.set_offset(offset);
    Variable out = ops::attention(qkv, static_cast<int>(NH), p, &mask_gen, true, 0, 0, AttentionKernel::Cudnn);
    Generator dout_gen(mask_seed + 1);
    out.backward(on_gpu(random_input({B, T, C}, dout_gen, DType::BF16), DType::BF16));
    if (dqkv) *dqkv = qkv.grad().to(Device::cpu());
    return out.data().to(Device::cpu());
  };
  Tensor dqkv, dqkv_again;
  const std::vector<double> out = run(17, &dqkv).to_double_vector();
  Generator dout_gen(mask_seed + 1);
  const std::vector<double> dout = random_input({B, T, C}, dout_gen, DType::BF16).to_double_vector();
  const std::vector<double> P = probabilities(x, B, T, NH, hs);
  const double keep_scale = 1.0 / (1.0 - p);

  // The same draw repeats bit for bit; another offset drops other elements.
  EXPECT_EQ(run(17, &dqkv_again).to_double_vector(), out);
  EXPECT_EQ(dqkv_again.to_double_vector(), dqkv.to_double_vector());
  EXPECT_NE(run(17 + B * NH * T * T, nullptr).to_double_vector(), out);

  std::vector<double> D(B * NH * T * T, 0.0), expect(B * T * 3 * C, 0.0);
  int64_t dropped = 0, causal = 0, wrong = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < hs; ++j) {
          const double o = out[(b * T + i) * C + h * hs + j];
          if (j > i) {  // masked, and v's columns past T are zero
            wrong += o != 0.0;
            continue;
          }
          const double kept = keep_scale * P[((b * NH + h) * T + i) * T + j];
          const bool is_kept = o > 0.5 * kept;
          wrong += std::abs(o - (is_kept ? kept : 0.0)) > 1e-2 * kept;
          D[((b * NH + h) * T + i) * T + j] = o;
          dropped += !is_kept;
          ++causal;
        }
  EXPECT_EQ(wrong, 0) << "elements of out that are neither P / (1 - p) nor 0";
  const double fraction = static_cast<double>(dropped) / causal;
  EXPECT_NEAR(fraction, p, 0.04) << dropped << " of " << causal << " dropped";

  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i) {
        auto at = [&](int64_t t, int64_t part, int64_t d) { return (b * T + t) * 3 * C + part * C + h * hs + d; };
        const double* Drow = &D[((b * NH + h) * T + i) * T];
        const double* Prow = &P[((b * NH + h) * T + i) * T];
        const double* g = &dout[(b * T + i) * C + h * hs];
        double delta = 0;
        for (int64_t j = 0; j <= i; ++j) delta += Drow[j] * g[j];  // dP[i, j] = dout[i] · v[j] = dout[i, j]
        for (int64_t j = 0; j <= i; ++j) {
          const double dS = Drow[j] * g[j] - Prow[j] * delta;
          for (int64_t d = 0; d < hs; ++d) {
            expect[at(i, 0, d)] += scale * dS * x[at(j, 1, d)];
            expect[at(j, 1, d)] += scale * dS * x[at(i, 0, d)];
            expect[at(j, 2, d)] += Drow[j] * g[d];
          }
        }
      }
  expect_close(dqkv, Tensor::from_vector(expect, {B, T, 3 * C}), 2e-2, 2e-2, "cudnn dropout dqkv");
}

// At GPT-2 124M's shape (T = 1024, 12 heads of 64), where a non-deterministic backward would sum
// dq, dk or dv over key or query tiles in a different order from run to run: three backward passes
// over the same input and output gradient give the same bits, as our kernel's do.
TEST(AttentionCudnnCuda, BackwardRepeatsBitForBitAtGpt2Shape) {
  ND_SKIP_WITHOUT_CUDNN();
  Generator gen(test_seed());
  const int64_t B = 4, T = 1024, NH = 12, C = NH * 64;
  const Tensor qkv_in = on_gpu(random_input({B, T, 3 * C}, gen, DType::BF16), DType::BF16);
  const Tensor dout = on_gpu(random_input({B, T, C}, gen, DType::BF16), DType::BF16);
  std::vector<double> first_out, first_grad;
  for (int run = 0; run < 3; ++run) {
    Variable qkv(qkv_in, true);
    Variable out = ops::attention(qkv, static_cast<int>(NH), 0.0f, nullptr, true, 0, 0, AttentionKernel::Cudnn);
    out.backward(dout);
    const std::vector<double> o = out.data().to(Device::cpu()).to_double_vector();
    const std::vector<double> g = qkv.grad().to(Device::cpu()).to_double_vector();
    if (run == 0) {
      first_out = o;
      first_grad = g;
      continue;
    }
    EXPECT_EQ(o, first_out) << "forward, run " << run;
    EXPECT_EQ(g, first_grad) << "dqkv, run " << run;
  }
}

// The kernel choice reaches every layer of a GPT: bf16 loss and gradients of a tiny model with
// cuDNN's attention against the same model with ours.
TEST(AttentionCudnnCuda, GptLossMatchesOurKernel) {
  ND_SKIP_WITHOUT_CUDNN();
  const uint64_t seed = test_seed();
  nn::GPTConfig config;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_embd = 128;
  config.block_size = 64;
  config.vocab_size = 65;
  config.padded_vocab_size = 128;
  Generator gen(seed);
  std::vector<int32_t> idx(2 * 64), targets(2 * 64);
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = static_cast<int32_t>(gen.next_u64() % 65);
    targets[i] = static_cast<int32_t>(gen.next_u64() % 65);
  }
  Tensor idx_gpu = Tensor::from_vector(idx, {2, 64}).to(Device::cuda(0));
  Tensor targets_gpu = Tensor::from_vector(targets, {2, 64}).to(Device::cuda(0));
  double loss[2];
  std::vector<Tensor> wte_grad(2);
  for (int k = 0; k < 2; ++k) {
    config.attention = k == 0 ? AttentionKernel::Ours : AttentionKernel::Cudnn;
    Generator init(seed + 1), dropout_gen(seed + 2);
    nn::GPT model(config, init, Device::cuda(0), DType::BF16);
    Variable l = model.forward(idx_gpu, &targets_gpu, dropout_gen).loss;
    l.backward();
    loss[k] = l.data().item();
    wte_grad[k] = model.named_parameters()[0].second.grad().to(DType::F32).to(Device::cpu());
  }
  EXPECT_NEAR(loss[1], loss[0], 1e-2 * std::abs(loss[0]));
  expect_close(wte_grad[1], wte_grad[0], 3e-2, 3e-2, "gpt " + std::string("wte grad, cudnn vs ours"));
}

TEST(AttentionCudnnCuda, RejectsF32) {
  ND_SKIP_WITHOUT_CUDNN();
  Variable qkv(Tensor::zeros({1, 4, 3 * 64}, DType::F32, Device::cuda(0)), true);
  EXPECT_THROW(ops::attention(qkv, 1, 0.0f, nullptr, false, 0, 0, AttentionKernel::Cudnn), Error);
}

}  // namespace
}  // namespace nd::test
