// The whole GPT on the GPU against the same GPT on the CPU: the same initial weights (same seed;
// drawn on each device, so equal to within the last bit of the device's logf and cosf), the same
// batch and dropout masks; f32 must match in loss and every parameter gradient (through two
// layers the rounding differences compound, hence 1e-4), bf16 in the loss to 1e-2. And the
// trainer's seeded micro-steps with the loss told its seed against the plain forward.
#include "kernels/cuda_test_util.h"
#include "nn/gpt.h"

namespace nd::test {
namespace {

nn::GPTConfig tiny_config() {
  nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 128;  // head size 64: the tensor-core attention in bf16
  c.block_size = 64;
  c.vocab_size = 65;
  c.padded_vocab_size = 128;
  c.dropout = 0.1f;
  return c;
}

struct Batch {
  Tensor idx, targets;
};

Batch random_batch(int64_t B, int64_t T, int64_t V, Generator& gen) {
  std::vector<int32_t> idx(B * T), targets(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    idx[i] = static_cast<int32_t>(gen.next_u64() % V);
    targets[i] = i % 7 == 5 ? -1 : static_cast<int32_t>(gen.next_u64() % V);
  }
  return {Tensor::from_vector(idx, {B, T}), Tensor::from_vector(targets, {B, T})};
}

// Forward + backward of the model on `device`; returns the loss.
Variable run(const nn::GPT& model, const Batch& batch, uint64_t dropout_seed) {
  Device device = model.device();
  Tensor idx = batch.idx.to(device), targets = batch.targets.to(device);
  Generator dropout_gen(dropout_seed);
  Variable loss = model.forward(idx, &targets, dropout_gen).loss;
  loss.backward();
  return loss;
}

TEST(GptCuda, F32MatchesCpuLossAndGradients) {
  ND_SKIP_WITHOUT_GPU();
  uint64_t seed = test_seed();
  Generator gen(seed);
  nn::GPTConfig config = tiny_config();
  Generator init_cpu(seed + 1), init_gpu(seed + 1);
  nn::GPT cpu_model(config, init_cpu, Device::cpu(), DType::F32);
  nn::GPT gpu_model(config, init_gpu, Device::cuda(0), DType::F32);
  Batch batch = random_batch(2, 64, config.vocab_size, gen);
  Variable cpu_loss = run(cpu_model, batch, seed + 2);
  Variable gpu_loss = run(gpu_model, batch, seed + 2);
  EXPECT_NEAR(gpu_loss.data().item(), cpu_loss.data().item(), 1e-5 * std::abs(cpu_loss.data().item()));
  auto cpu_params = cpu_model.named_parameters(), gpu_params = gpu_model.named_parameters();
  ASSERT_EQ(cpu_params.size(), gpu_params.size());
  for (size_t i = 0; i < cpu_params.size(); ++i)
    expect_close(gpu_params[i].second.grad(), cpu_params[i].second.grad(), 1e-4, 1e-4,
                 "grad of " + cpu_params[i].first);
}

TEST(GptCuda, Bf16LossMatchesCpu) {
  ND_SKIP_WITHOUT_GPU();
  uint64_t seed = test_seed();
  Generator gen(seed);
  nn::GPTConfig config = tiny_config();
  Generator init_cpu(seed + 1), init_gpu(seed + 1);
  nn::GPT cpu_model(config, init_cpu, Device::cpu(), DType::F32);
  nn::GPT gpu_model(config, init_gpu, Device::cuda(0), DType::BF16);
  Batch batch = random_batch(2, 64, config.vocab_size, gen);
  double cpu_loss = run(cpu_model, batch, seed + 2).data().item();
  double gpu_loss = run(gpu_model, batch, seed + 2).data().item();
  EXPECT_NEAR(gpu_loss, cpu_loss, 1e-2 * std::abs(cpu_loss));
  for (auto& [name, p] : gpu_model.named_parameters()) {
    std::vector<double> g = p.grad().to_double_vector();
    for (double x : g) ASSERT_TRUE(std::isfinite(x)) << name;
  }
}

// The trainer's micro-steps (grad_accum 3, each loss seeded with the same 1/3 tensor), the loss told
// its seed and overwriting the logits (cross_entropy_grad) against the plain forward, whose seed is
// another tensor: every micro-step loss and every parameter gradient.
void check_announced_seed(DType dtype, double tol) {
  uint64_t seed = test_seed();
  Generator gen(seed);
  nn::GPTConfig config = tiny_config();
  std::vector<Batch> batches;
  for (int micro = 0; micro < 3; ++micro) batches.push_back(random_batch(2, 64, config.vocab_size, gen));
  std::vector<std::pair<std::vector<double>, nn::NamedParameters>> runs;
  for (bool announced : {true, false}) {
    Generator init(seed + 1), dropout_gen(seed + 2);
    nn::GPT model(config, init, Device::cuda(0), dtype);
    const Tensor loss_scale = Tensor::full(Shape{}, 1.0 / 3.0, ops::loss_dtype(dtype), Device::cuda(0));
    const ops::LossGradient told{loss_scale, true};
    std::vector<double> losses;
    model.zero_grad();
    for (const Batch& b : batches) {
      Tensor idx = b.idx.to(model.device()), targets = b.targets.to(model.device());
      nn::GPT::Output out = model.forward(idx, &targets, dropout_gen, announced ? &told : nullptr);
      EXPECT_EQ(out.logits.defined(), !announced);
      out.loss.backward(announced ? loss_scale
                                  : Tensor::full(Shape{}, 1.0 / 3.0, ops::loss_dtype(dtype), Device::cuda(0)));
      losses.push_back(out.loss.data().item());
    }
    runs.emplace_back(losses, model.named_parameters());
  }
  const std::string what = std::string(dtype_name(dtype)) + " announced seed against plain";
  for (size_t m = 0; m < runs[0].first.size(); ++m)
    EXPECT_NEAR(runs[0].first[m], runs[1].first[m], tol * std::abs(runs[1].first[m])) << what << " loss " << m;
  ASSERT_EQ(runs[0].second.size(), runs[1].second.size());
  for (size_t i = 0; i < runs[0].second.size(); ++i)
    expect_close(runs[0].second[i].second.grad(), runs[1].second[i].second.grad(), tol, tol,
                 what + " grad of " + runs[0].second[i].first);
}

TEST(GptCuda, F32AnnouncedLossSeedMatchesPlain) {
  ND_SKIP_WITHOUT_GPU();
  check_announced_seed(DType::F32, 1e-5);
}

TEST(GptCuda, Bf16AnnouncedLossSeedMatchesPlain) {
  ND_SKIP_WITHOUT_GPU();
  check_announced_seed(DType::BF16, 1e-2);
}

}  // namespace
}  // namespace nd::test
