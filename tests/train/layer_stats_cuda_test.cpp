// The per-layer statistics on the GPU equal the CPU reference's: one step of a tiny GPT built from
// the same seed on both devices (f32, relative 1e-3: GPU sums in another order, TF32-free f32
// GEMMs), and the kernels on bf16 tensors against the CPU loops over the same (rounded) values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kernels/cpu/layer_stats.h"
#include "nn/gpt.h"
#include "tensor/device.h"
#include "train/layer_stats.h"
#include "train/layer_stats_device.h"
#include "train/optimizer.h"

namespace nd::train {
namespace {

void expect_close(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what;
    return;
  }
  EXPECT_NEAR(got, want, 1e-3 * std::abs(want) + 1e-6) << what;
}

LayerStatsResult one_step(Device device) {
  nn::GPTConfig cfg;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 32;
  cfg.block_size = 16;
  cfg.vocab_size = 13;
  Generator init(3);
  nn::GPT model(cfg, init, device);
  AdamW opt(model.named_parameters(), AdamWOptions{});
  const int64_t B = 3, T = 16;
  std::vector<int32_t> ids(B * T), next(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    ids[i] = static_cast<int32_t>((7 * i + 3) % cfg.vocab_size);
    next[i] = static_cast<int32_t>((5 * i + 1) % cfg.vocab_size);
  }
  Tensor idx = Tensor::from_vector(ids, Shape{B, T}), targets = Tensor::from_vector(next, Shape{B, T});
  LayerStats stats(model, opt, LayerStatsRanks{});
  stats.before_step(idx);
  opt.flat().zero_grad();
  Generator dropout(1, 1);
  Tensor targets_on = targets.to(device);
  model.forward(idx.to(device), &targets_on, dropout).loss.backward();
  opt.step(1e-2, 1.0);
  return stats.after_step(1);
}

TEST(LayerStatsCuda, StepStatisticsEqualTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  LayerStatsResult cpu = one_step(Device::cpu()), gpu = one_step(Device::cuda(0));
  ASSERT_EQ(cpu.tensors.size(), gpu.tensors.size());
  for (size_t i = 0; i < cpu.tensors.size(); ++i) {
    const TensorStats &c = cpu.tensors[i], &g = gpu.tensors[i];
    expect_close(g.grad_norm, c.grad_norm, c.name + " grad norm");
    expect_close(g.weight_norm, c.weight_norm, c.name + " weight norm");
    expect_close(g.update_ratio, c.update_ratio, c.name + " update ratio");
  }
  ASSERT_EQ(cpu.blocks.size(), gpu.blocks.size());
  for (size_t l = 0; l < cpu.blocks.size(); ++l) {
    const BlockStats &c = cpu.blocks[l], &g = gpu.blocks[l];
    expect_close(g.grad_norm, c.grad_norm, "block grad norm");
    expect_close(g.resid_rms, c.resid_rms, "residual rms");
    expect_close(g.attn_rms, c.attn_rms, "attention rms");
    expect_close(g.mlp_rms, c.mlp_rms, "mlp rms");
    expect_close(g.gelu_saturated, c.gelu_saturated, "gelu saturation");
    for (size_t h = 0; h < c.attn_entropy.size(); ++h) expect_close(g.attn_entropy[h], c.attn_entropy[h], "entropy");
  }
}

// Values spread over many magnitudes (some below fp16's and bf16's flush thresholds, some below
// -3), as bf16 on the GPU against f32 copies of the same rounded values on the CPU. The shapes take
// the tiled entropy kernel at head sizes 16, 64 and 80 (one and several tiles of rows and keys) and
// the per-row kernel at head size 12.
struct StatsShape {
  int64_t B, T, C, NH;
};

void check_kernels_equal_the_cpu_loops(const StatsShape& s) {
  SCOPED_TRACE("B " + std::to_string(s.B) + " T " + std::to_string(s.T) + " C " + std::to_string(s.C) + " NH " +
               std::to_string(s.NH));
  const int64_t B = s.B, T = s.T, C = s.C, NH = s.NH;
  Tensor qkv = Tensor::empty({B, T, 3 * C});
  float* v = qkv.data<float>();
  for (int64_t i = 0; i < qkv.numel(); ++i) v[i] = 2.0f * std::sin(0.37f * static_cast<float>(i) + 1.0f);
  for (int64_t i = 0; i < qkv.numel(); i += 7) v[i] *= 1e-9f;
  for (int64_t i = 3; i < qkv.numel(); i += 11) v[i] = -4.0f;
  Tensor rounded = qkv.to(DType::BF16).to(DType::F32);  // the values bf16 holds, in f32
  Tensor on_gpu = qkv.to(DType::BF16).to(Device::cuda(0));

  Tensor want = Tensor::zeros({kStatsPerSlot + NH}, DType::F64), got = Tensor::zeros({kStatsPerSlot + NH}, DType::F64, Device::cuda(0));
  add_tensor_stats(rounded, nullptr, want, 0);
  add_attention_entropy(rounded, NH, want, kStatsPerSlot);
  add_tensor_stats(on_gpu, nullptr, got, 0);
  add_attention_entropy(on_gpu, NH, got, kStatsPerSlot);
  std::vector<double> w = want.to_double_vector(), g = got.to(Device::cpu()).to_double_vector();
  EXPECT_NEAR(g[kSumOfSquares], w[kSumOfSquares], 1e-4 * w[kSumOfSquares]);
  EXPECT_EQ(g[kBf16Underflow], w[kBf16Underflow]);
  EXPECT_EQ(g[kFp16Underflow], w[kFp16Underflow]);
  EXPECT_GT(w[kFp16Underflow], 0.0);
  EXPECT_EQ(g[kGeluSaturated], w[kGeluSaturated]);
  for (int64_t h = 0; h < NH; ++h) EXPECT_NEAR(g[kStatsPerSlot + h], w[kStatsPerSlot + h], 1e-3 * w[kStatsPerSlot + h]);
}

TEST(LayerStatsCuda, Bf16KernelsEqualTheCpuLoops) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
  for (const StatsShape& s : {StatsShape{2, 37, 48, 3}, StatsShape{1, 70, 128, 2}, StatsShape{2, 33, 80, 1},
                              StatsShape{1, 20, 36, 3}})
    check_kernels_equal_the_cpu_loops(s);
}

}  // namespace
}  // namespace nd::train
