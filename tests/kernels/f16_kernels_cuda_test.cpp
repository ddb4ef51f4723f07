// The CUDA kernels in f16 (--dtype fp16) against the f32 CPU reference, through the ops (output and
// every gradient, first and accumulated contributions): linear, the GELU MLP (cuBLASLt's epilogue
// where it fuses), layernorm, attention (our simple kernels: the tensor-core ones are bf16 only;
// and cuDNN's fused attention with an f16 graph, where this build and GPU have it),
// cross-entropy (plain and fused with its gradient), embedding, GELU, add; the f16 GEMM with f32
// accumulation into an f16 and an f32 output against a float64 product of the same f16 inputs; the
// device conversion against the host's round to nearest even; and the whole GPT's loss.
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"
#include "kernels/cudnn/attention_cudnn.h"
#include "nn/gpt.h"

#if NANODIST_WITH_CUDA
#include "kernels/cuda/cublaslt.h"
#endif

namespace nd::test {
namespace {

constexpr DType kF16 = DType::F16;

void check_linear(const Shape& x_shape, int64_t N, bool bias) {
  Generator gen(test_seed());
  const int64_t K = x_shape.back();
  std::vector<Tensor> inputs = {random_input(x_shape, gen, kF16), random_input({N, K}, gen, kF16, 0.3)};
  if (bias) inputs.push_back(random_input({N}, gen, kF16));
  check_op_against_cpu(
      [bias](const std::vector<Variable>& v, Device) { return ops::linear(v[0], v[1], bias ? v[2] : Variable()); },
      inputs, std::vector<bool>(inputs.size(), true), kF16, gen, "linear f16");
}

TEST(F16KernelsCuda, Linear) {
  ND_SKIP_WITHOUT_GPU();
  check_linear({2, 9, 64}, 192, true);
  check_linear({17, 40}, 24, true);
  check_linear({4, 8, 32}, 48, false);
}

TEST(F16KernelsCuda, GeluMlp) {
  ND_SKIP_WITHOUT_GPU();
  for (bool seed_grads : {false, true}) {
    for (int64_t H : {256, 36}) {  // 36: H % 8 != 0, no epilogue
      Generator gen(test_seed());
      const int64_t C = 64;
      std::vector<Tensor> inputs = {random_input({2, 9, C}, gen, kF16), random_input({H, C}, gen, kF16, 0.3),
                                    random_input({C, H}, gen, kF16, 0.3), random_input({H}, gen, kF16),
                                    random_input({C}, gen, kF16)};
      check_op_against_cpu(
          [](const std::vector<Variable>& v, Device) { return ops::gelu_mlp(v[0], v[1], v[3], v[2], v[4]); }, inputs,
          {true, true, true, true, true}, kF16, gen, "gelu_mlp f16 H=" + std::to_string(H), seed_grads);
    }
  }
}

TEST(F16KernelsCuda, Layernorm) {
  ND_SKIP_WITHOUT_GPU();
  for (Shape shape : {Shape{4, 9, 96}, Shape{5, 33}}) {
    Generator gen(test_seed());
    const int64_t C = shape.back();
    check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::layernorm(v[0], v[1], v[2]); },
                         {random_input(shape, gen, kF16, 2.0), random_input({C}, gen, kF16),
                          random_input({C}, gen, kF16)},
                         {true, true, true}, kF16, gen, "layernorm f16");
  }
}

void check_attention(int64_t B, int64_t T, int64_t NH, int64_t hs, float dropout) {
  Generator gen(test_seed());
  const int64_t C = NH * hs;
  const uint64_t mask_seed = gen.next_u64();
  auto op = [NH, dropout, mask_seed](const std::vector<Variable>& v, Device) {
    Generator mask_gen(mask_seed, 3);
    mask_gen.set_offset(17);
    return ops::attention(v[0], static_cast<int>(NH), dropout, &mask_gen, true);
  };
  check_op_against_cpu(op, {random_input({B, T, 3 * C}, gen, kF16)}, {true}, kF16, gen,
                       "attention f16 T=" + std::to_string(T) + " hs=" + std::to_string(hs));
}

TEST(F16KernelsCuda, Attention) {
  ND_SKIP_WITHOUT_GPU();
  check_attention(2, 37, 2, 64, 0.0f);
  check_attention(1, 150, 2, 64, 0.0f);
  check_attention(2, 33, 2, 32, 0.0f);
  check_attention(1, 45, 1, 128, 0.2f);
}

TEST(F16KernelsCuda, CudnnAttention) {
  ND_SKIP_WITHOUT_GPU();
  std::string why;
  if (!cudnn::attention_available(&why)) GTEST_SKIP() << why;
  for (bool seed_grads : {false, true}) {
    for (int64_t hs : {64, 128}) {
      Generator gen(test_seed());
      const int64_t NH = 2;
      auto op = [NH](const std::vector<Variable>& v, Device device) {
        return ops::attention(v[0], static_cast<int>(NH), 0.0f, nullptr, true, 0, 0,
                              device.is_cuda() ? ops::AttentionKernel::Cudnn : ops::AttentionKernel::Ours);
      };
      check_op_against_cpu(op, {random_input({2, 70, 3 * NH * hs}, gen, kF16)}, {true}, kF16, gen,
                           "cudnn attention f16 hs=" + std::to_string(hs), seed_grads);
    }
  }
}

void check_cross_entropy(int64_t B, int64_t T, int64_t Vp, int64_t V, bool seed_grads) {
  Generator gen(test_seed());
  std::vector<int32_t> t(B * T);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>(gen.next_u64() % V);
  Tensor targets = Tensor::from_vector(t, {B, T});
  Tensor targets_gpu = targets.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::cross_entropy(v[0], device.is_cpu() ? targets : targets_gpu, V);
      },
      {random_input({B, T, Vp}, gen, kF16, 3.0)}, {true}, kF16, gen, "cross_entropy f16", seed_grads,
      ops::loss_dtype(kF16));  // an f32 loss, checked at f32's tolerance
}

TEST(F16KernelsCuda, CrossEntropy) {
  ND_SKIP_WITHOUT_GPU();
  check_cross_entropy(2, 9, 384, 300, true);
  check_cross_entropy(1, 5, 65, 65, true);
  check_cross_entropy(2, 9, 384, 300, false);
}

TEST(F16KernelsCuda, EmbeddingGeluAdd) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(test_seed());
  const int64_t B = 2, T = 33, V = 65, C = 64;
  std::vector<int32_t> ids(B * T);
  for (auto& id : ids) id = static_cast<int32_t>(gen.next_u64() % V);
  Tensor idx = Tensor::from_vector(ids, {B, T});
  Tensor idx_gpu = idx.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::embedding(device.is_cpu() ? idx : idx_gpu, v[0], v[1]);
      },
      {random_input({V, C}, gen, kF16), random_input({T + 3, C}, gen, kF16)}, {true, true}, kF16, gen,
      "embedding f16");
  check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::gelu(v[0]); },
                       {random_input({3, 7, 40}, gen, kF16, 2.0)}, {true}, kF16, gen, "gelu f16");
  check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::add(v[0], v[1]); },
                       {random_input({5, 24}, gen, kF16), random_input({5, 24}, gen, kF16)}, {true, true}, kF16, gen,
                       "add f16");
}

TEST(F16KernelsCuda, DeviceConversionRoundsAsTheHost) {
  ND_SKIP_WITHOUT_GPU();
  // Every f32 exponent f16 can reach and beyond, ties included: the host's f32_to_f16 is the reference.
  std::vector<float> values;
  for (int e = -27; e <= 17; ++e)
    for (int m = 0; m < 64; ++m) values.push_back(std::ldexp(1.0f + m / 64.0f + 1.0f / 4096.0f * (m % 3), e));
  values.push_back(65520.0f);
  values.push_back(-0.0f);
  Tensor host = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
  Tensor gpu = host.to(Device::cuda(0)).to(kF16).to(Device::cpu());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(gpu.data<f16>()[i].bits, f32_to_f16(values[i]).bits) << values[i];
}

// f32 accumulation: the f32 output is within f32 rounding of the float64 product of the f16
// inputs over k = 1024 (an f16 accumulator would be off by ~k * 2^-11 relative); the f16 output
// within one f16 rounding of it.
TEST(F16KernelsCuda, GemmAccumulatesInF32) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  const int64_t m = 64, n = 48, k = 1024;
  Generator gen(test_seed());
  Tensor a = random_input({m * k}, gen, kF16), b = random_input({k * n}, gen, kF16);
  const std::vector<double> want = column_major_product(a.to_double_vector(), b.to_double_vector(), m, n, k);
  Tensor expected = Tensor::from_vector(want, {m * n});
  Tensor da = on_gpu(a, kF16), db = on_gpu(b, kF16);
  for (DType out : {DType::F32, kF16}) {
    Tensor d = Tensor::zeros({m * n}, out, Device::cuda(0));
    cuda::GemmProblem p;
    p.a_type = kF16;
    p.d_type = out;
    p.m = m, p.n = n, p.k = k;
    p.A = da.raw_data(), p.lda = m;
    p.B = db.raw_data(), p.ldb = k;
    p.D = d.raw_data(), p.ldd = m;
    cuda::gemm(p);
    const double rtol = out == DType::F32 ? 1e-5 : 1e-3;
    expect_close(d.to(Device::cpu()).to(DType::F32), expected, rtol, rtol,
                 std::string("f16 gemm into ") + dtype_name(out));
  }
#endif
}

TEST(F16KernelsCuda, GptLossMatchesTheF32Cpu) {
  ND_SKIP_WITHOUT_GPU();
  const uint64_t seed = test_seed();
  nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 128;
  c.block_size = 64;
  c.vocab_size = 65;
  c.padded_vocab_size = 128;
  Generator init_cpu(seed), init_gpu(seed), gen(seed + 1);
  nn::GPT cpu_model(c, init_cpu, Device::cpu(), DType::F32);
  nn::GPT gpu_model(c, init_gpu, Device::cuda(0), kF16);
  std::vector<int32_t> idx(2 * 64), targets(2 * 64);
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = static_cast<int32_t>(gen.next_u64() % 65);
    targets[i] = static_cast<int32_t>(gen.next_u64() % 65);
  }
  Tensor x = Tensor::from_vector(idx, {2, 64}), y = Tensor::from_vector(targets, {2, 64});
  Generator d_cpu(seed + 2), d_gpu(seed + 2);
  Tensor y_gpu = y.to(Device::cuda(0));
  const double cpu_loss = cpu_model.forward(x, &y, d_cpu).loss.data().item();
  const double gpu_loss = gpu_model.forward(x.to(Device::cuda(0)), &y_gpu, d_gpu).loss.data().item();
  EXPECT_NEAR(gpu_loss, cpu_loss, 3e-3 * cpu_loss);
}

}  // namespace
}  // namespace nd::test
