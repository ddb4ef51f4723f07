// Per-layer statistics (train/layer_stats.h) against direct computations on a tiny GPT: gradient,
// weight and update norms from the tensors themselves, activation RMS and GELU saturation from the
// blocks' outputs, attention entropy from softmax rows computed here in double; the kernel's
// underflow and saturation counts on hand-picked values; and a run with --layer-stats writing
// one line per statistics step to metrics.jsonl.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include "data/json_value.h"
#include "kernels/cpu/layer_stats.h"
#include "nn/gpt.h"
#include "train/layer_stats.h"
#include "train/optimizer.h"
#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

std::vector<double> values(const Tensor& t) { return t.to(Device::cpu()).to_double_vector(); }

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double rms(const Tensor& t) { return norm(values(t)) / std::sqrt(static_cast<double>(t.numel())); }

void expect_rel(double got, double want, const std::string& what, double rel = 1e-5) {
  EXPECT_NEAR(got, want, rel * std::abs(want) + 1e-12) << what;
}

TEST(LayerStatsKernel, CountsUnderflowAndSaturationAtTheirThresholds) {
  // bf16 rounds |x| <= 2^-134 to zero, fp16 |x| <= 2^-25; GELU saturates below -3.
  std::vector<float> x = {0.0f, 1e-41f, 1e-30f, 2e-8f, 1e-7f, -4.0f, -2.0f, 3.5f, -3.5f};
  std::vector<float> ref(x.size(), 0.5f);
  std::vector<double> out(8, 0.0);
  cpu::tensor_stats(std::vector<StatSlot<float>>{{x.data(), nullptr, static_cast<int64_t>(x.size()), 0},
                                                 {x.data(), ref.data(), static_cast<int64_t>(x.size()), 4}},
                    out.data());
  double squares = 0, diff = 0;
  for (float v : x) {
    squares += static_cast<double>(v) * v;
    diff += (v - 0.5) * (v - 0.5);
  }
  EXPECT_NEAR(out[kSumOfSquares], squares, 1e-9);
  EXPECT_EQ(out[kBf16Underflow], 1.0);
  EXPECT_EQ(out[kFp16Underflow], 3.0);
  EXPECT_EQ(out[kGeluSaturated], 2.0);
  EXPECT_NEAR(out[4 + kSumOfSquares], diff, 1e-9);
}

// Keeps a clone of every block's activations (a forward of its own, no gradients, no dropout).
struct Recorder : nn::BlockObserver {
  std::map<int, std::vector<Tensor>> seen;  // ln_1, attn, ln_2, mlp, output
  void on_block(const nn::BlockActivations& a) override {
    seen[a.layer] = {a.ln_1.clone(), a.attn.clone(), a.ln_2.clone(), a.mlp.clone(), a.output.clone()};
  }
};

// x (R, K) . w (N, K)^T + b, in double.
std::vector<double> affine(const std::vector<double>& x, int64_t R, int64_t K, const std::vector<double>& w,
                           const std::vector<double>& b, int64_t N) {
  std::vector<double> y(R * N);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double s = b.empty() ? 0.0 : b[n];
      for (int64_t k = 0; k < K; ++k) s += x[r * K + k] * w[n * K + k];
      y[r * N + n] = s;
    }
  return y;
}

TEST(LayerStats, EqualsDirectComputationOnATinyModel) {
  nn::GPTConfig cfg;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 16;
  cfg.block_size = 8;
  cfg.vocab_size = 11;
  Generator init(5);
  nn::GPT model(cfg, init);
  AdamW opt(model.named_parameters(), AdamWOptions{});
  // Wide c_fc weights in block 1 put some GELU inputs below -3.
  for (auto& [name, p] : model.named_parameters())
    if (name == "transformer.h.1.mlp.c_fc.weight") {
      float* w = p.data().data<float>();
      for (int64_t i = 0; i < p.data().numel(); ++i) w[i] *= 40.0f;
    }
  const int64_t B = 3, T = 8, C = cfg.n_embd, NH = cfg.n_head, hs = C / NH;
  std::vector<int32_t> ids(B * T), next(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    ids[i] = static_cast<int32_t>((7 * i + 3) % cfg.vocab_size);
    next[i] = static_cast<int32_t>((5 * i + 1) % cfg.vocab_size);
  }
  Tensor idx = Tensor::from_vector(ids, Shape{B, T}), targets = Tensor::from_vector(next, Shape{B, T});

  // Expected activations from a recorded forward; the weights before the step.
  Recorder recorder;
  {
    NoGradGuard no_grad;
    Generator unused(0, 0);
    model.set_training(false);
    model.set_block_observer(&recorder);
    model.blocks(model.embed(idx, unused), unused);
    model.set_block_observer(nullptr);
    model.set_training(true);
  }
  std::map<std::string, std::vector<double>> before;
  for (auto& [name, p] : model.named_parameters()) before[name] = values(p.data());

  LayerStats stats(model, opt, LayerStatsRanks{});
  stats.before_step(idx);
  opt.flat().zero_grad();
  Generator dropout(1, 1);
  model.forward(idx, &targets, dropout).loss.backward();
  opt.step(1e-2, 1.0);
  LayerStatsResult r = stats.after_step(1);

  auto named = model.named_parameters();
  ASSERT_EQ(r.tensors.size(), named.size());
  std::map<int, double> block_grad_sq;
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& [name, p] = named[i];
    const TensorStats& t = r.tensors[i];
    ASSERT_EQ(t.name, name);
    const dist::FlatEntry* entry = nullptr;
    for (const auto& e : opt.flat().entries())
      if (e.name == name) entry = &e;
    ASSERT_NE(entry, nullptr);
    std::vector<double> g = values(opt.flat().grad_of(*entry)), w1 = values(p.data()), w0 = before[name];
    std::vector<double> dw(w0.size());
    for (size_t k = 0; k < w0.size(); ++k) dw[k] = w1[k] - w0[k];
    expect_rel(t.grad_norm, norm(g), name + " grad norm");
    expect_rel(t.weight_norm, norm(w0), name + " weight norm");
    if (norm(w0) > 0) {
      expect_rel(t.update_ratio, norm(dw) / norm(w0), name + " update ratio", 1e-4);
      EXPECT_GT(t.update_ratio, 0.0) << name;
    } else {
      EXPECT_TRUE(std::isnan(t.update_ratio)) << name << ": biases start at zero, a ratio to 0 is undefined";
    }
    EXPECT_EQ(t.grad_underflow_bf16, 0.0) << name;
    if (name.rfind("transformer.h.", 0) == 0) block_grad_sq[std::stoi(name.substr(14))] += norm(g) * norm(g);
  }

  ASSERT_EQ(r.blocks.size(), 2u);
  double saturated_total = 0;
  for (int l = 0; l < 2; ++l) {
    const BlockStats& b = r.blocks[l];
    const auto& act = recorder.seen.at(l);
    expect_rel(b.grad_norm, std::sqrt(block_grad_sq[l]), "block grad norm");
    expect_rel(b.resid_rms, rms(act[4]), "residual rms");
    expect_rel(b.attn_rms, rms(act[1]), "attention rms");
    expect_rel(b.mlp_rms, rms(act[3]), "mlp rms");
    const std::string prefix = "transformer.h." + std::to_string(l) + ".";
    auto param = [&](const std::string& n) { return before.at(prefix + n); };
    // GELU inputs: ln_2 (B T, C) times c_fc (4C, C) plus bias.
    std::vector<double> pre = affine(values(act[2]), B * T, C, param("mlp.c_fc.weight"), param("mlp.c_fc.bias"), 4 * C);
    double saturated = 0;
    for (double v : pre) saturated += v < -3.0 ? 1.0 : 0.0;
    expect_rel(b.gelu_saturated, saturated / pre.size(), "gelu saturation");
    saturated_total += saturated;
    // Entropy of each causal softmax row of q k^T / sqrt(hs), averaged over the rows per head.
    std::vector<double> qkv =
        affine(values(act[0]), B * T, C, param("attn.c_attn.weight"), param("attn.c_attn.bias"), 3 * C);
    ASSERT_EQ(b.attn_entropy.size(), static_cast<size_t>(NH));
    for (int64_t h = 0; h < NH; ++h) {
      double total = 0;
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t t = 0; t < T; ++t) {
          std::vector<double> p(t + 1);
          double z = 0;
          for (int64_t j = 0; j <= t; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < hs; ++d)
              dot += qkv[(bb * T + t) * 3 * C + h * hs + d] * qkv[(bb * T + j) * 3 * C + C + h * hs + d];
            p[j] = std::exp(dot / std::sqrt(static_cast<double>(hs)));
            z += p[j];
          }
          for (double& v : p) total -= v / z * std::log(v / z);
        }
      expect_rel(b.attn_entropy[h], total / (B * T), "attention entropy", 1e-4);
    }
  }
  EXPECT_GT(saturated_total, 0.0) << "the test should see saturated GELU inputs";

  // The JSON line parses and carries the same numbers.
  JsonValue line = parse_json(r.json(), "layer stats line");
  EXPECT_EQ(line.find("step")->as_int("step"), 1);
  const JsonValue* ls = line.find("layer_stats");
  ASSERT_NE(ls, nullptr);
  expect_rel(ls->find("blocks")->items.at(1).find("resid_rms")->as_double("rms"), r.blocks[1].resid_rms, "json");
  expect_rel(ls->find("tensors")->find("transformer.wte.weight")->find("grad_norm")->as_double("g"),
             r.tensors[0].grad_norm, "json");
}

TEST(LayerStats, TrainingWritesOneLinePerStatisticsStep) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 6;
  c.observe.layer_stats = 3;
  run_training(c);
  std::ifstream in(dir / "out/metrics.jsonl");
  std::vector<int64_t> steps;
  for (std::string line; std::getline(in, line);) {
    JsonValue v = parse_json(line, "metrics.jsonl");
    if (v.find("layer_stats")) steps.push_back(v.find("step")->as_int("step"));
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 6}));
}

// The probe draws no dropout mask and changes no weight: with dropout on, a run with statistics
// every step takes the same steps, bit for bit, as one without.
TEST(LayerStats, LeavesTheRunBitIdentical) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "plain");
  c.schedule.max_iters = 6;
  c.model.dropout = 0.2;
  TrainResult plain = run_training(c);
  c.checkpoint.out_dir = dir / "stats";
  c.observe.layer_stats = 1;
  TrainResult stats = run_training(c);
  EXPECT_EQ(stats.step_losses, plain.step_losses);
  EXPECT_EQ(stats.params_hash, plain.params_hash);
}

}  // namespace
}  // namespace nd::train
