// AdamW: the weight-decay groups, the global norm, clipping and the update itself, against
// AdamW and clip_grad_norm_ computed by hand in double here.
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/random.h"
#include "train/optimizer.h"

namespace nd::train {
namespace {

struct Params {
  Variable w{Tensor::zeros({3, 4}), true};  // a matmul weight: decayed
  Variable e{Tensor::zeros({5, 2}), true};  // an embedding: decayed
  Variable b{Tensor::zeros({4}), true};     // a bias: not decayed
  std::vector<std::pair<std::string, Variable>> named() const { return {{"w", w}, {"e", e}, {"b", b}}; }
};

void fill_random(Tensor t, Generator& gen, double scale) { t.copy_from(Tensor::randn(t.shape(), gen, 0.0, scale)); }

// One AdamW update of `p` by hand (torch.optim.AdamW's formula), in double.
std::vector<double> adamw_by_hand(std::vector<double> p, const std::vector<double>& g, std::vector<double>& m,
                                  std::vector<double>& v, double lr, double b1, double b2, double eps, double wd,
                                  int step, double scale) {
  for (size_t i = 0; i < p.size(); ++i) {
    double gi = g[i] * scale;
    p[i] *= 1.0 - lr * wd;
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
    double m_hat = m[i] / (1 - std::pow(b1, step));
    double v_hat = v[i] / (1 - std::pow(b2, step));
    p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
  return p;
}

TEST(AdamW, DecayGroupIsTwoDimensionalTensors) {
  Params P;
  AdamW opt(P.named(), AdamWOptions{});
  EXPECT_TRUE(opt.state("w").decay);
  EXPECT_TRUE(opt.state("e").decay);
  EXPECT_FALSE(opt.state("b").decay);
  EXPECT_THROW(opt.state("nope"), Error);
}

TEST(AdamW, ZeroGradientStepOnlyDecaysTheDecayGroup) {
  Params P;
  Generator gen(1);
  for (Variable* v : {&P.w, &P.e, &P.b}) {
    fill_random(v->data(), gen, 1.0);
    v->grad_slot().buffer.zero_();
  }
  auto w0 = P.w.data().to_double_vector(), e0 = P.e.data().to_double_vector(), b0 = P.b.data().to_double_vector();
  AdamWOptions o;
  o.weight_decay = 0.5;
  AdamW opt(P.named(), o);
  double lr = 0.1;
  EXPECT_EQ(opt.step(lr, 1.0), 0.0);
  auto w1 = P.w.data().to_double_vector(), e1 = P.e.data().to_double_vector(), b1 = P.b.data().to_double_vector();
  for (size_t i = 0; i < w0.size(); ++i) EXPECT_NEAR(w1[i], w0[i] * (1 - lr * 0.5), 1e-6);
  for (size_t i = 0; i < e0.size(); ++i) EXPECT_NEAR(e1[i], e0[i] * (1 - lr * 0.5), 1e-6);
  for (size_t i = 0; i < b0.size(); ++i) EXPECT_EQ(b1[i], b0[i]);
}

void check_steps_against_hand(double grad_clip, double grad_std, bool expect_clipped) {
  Params P;
  Generator gen(3);
  std::vector<Variable*> vars = {&P.w, &P.e, &P.b};
  for (Variable* v : vars) fill_random(v->data(), gen, 0.5);
  AdamWOptions o;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.weight_decay = 0.1;
  AdamW opt(P.named(), o);
  std::vector<std::vector<double>> m(3), v(3);
  for (size_t k = 0; k < 3; ++k) m[k] = v[k] = std::vector<double>(static_cast<size_t>(vars[k]->data().numel()), 0.0);
  for (int step = 1; step <= 3; ++step) {
    double sum_sq = 0;
    std::vector<std::vector<double>> grads, before;
    for (Variable* var : vars) {
      fill_random(var->grad_slot().buffer, gen, grad_std);
      grads.push_back(var->grad().to_double_vector());
      before.push_back(var->data().to_double_vector());
      for (double g : grads.back()) sum_sq += g * g;
    }
    double norm = std::sqrt(sum_sq);
    double scale = 1.0;
    if (grad_clip > 0 && grad_clip / (norm + 1e-6) < 1.0) scale = grad_clip / (norm + 1e-6);
    EXPECT_EQ(scale < 1.0, expect_clipped);
    double lr = 1e-2 * step;
    double reported = opt.step(lr, grad_clip);
    EXPECT_NEAR(reported, norm, 1e-5 * norm) << "the pre-clip norm is reported";
    EXPECT_EQ(opt.step_count(), step);
    for (size_t k = 0; k < vars.size(); ++k) {
      double wd = vars[k]->data().ndim() >= 2 ? 0.1 : 0.0;
      auto expected = adamw_by_hand(before[k], grads[k], m[k], v[k], lr, 0.9, 0.95, 1e-8, wd, step, scale);
      auto got = vars[k]->data().to_double_vector();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], expected[i], 1e-5 * (1 + std::fabs(expected[i]))) << "tensor " << k << " i " << i;
      auto got_m = opt.states()[k].m.to_double_vector();
      for (size_t i = 0; i < got_m.size(); ++i) ASSERT_NEAR(got_m[i], m[k][i], 1e-6 * (1 + std::fabs(m[k][i])));
    }
  }
}

TEST(AdamW, ClippedStepsMatchHandComputation) { check_steps_against_hand(1.0, 2.0, true); }
TEST(AdamW, UnclippedWhenNormBelowThreshold) { check_steps_against_hand(1000.0, 0.5, false); }
TEST(AdamW, NoClippingWhenGradClipIsZero) { check_steps_against_hand(0.0, 2.0, false); }

TEST(AdamW, ClipScaleFormula) {
  EXPECT_EQ(clip_scale(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_scale(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_EQ(clip_scale(100.0, 0.0), 1.0);
}

TEST(AdamW, ParametersWithoutGradientAreLeftAlone) {
  Params P;
  Generator gen(5);
  fill_random(P.w.data(), gen, 1.0);
  fill_random(P.b.data(), gen, 1.0);
  fill_random(P.b.grad_slot().buffer, gen, 1.0);
  auto w0 = P.w.data().to_double_vector();
  AdamW opt(P.named(), AdamWOptions{});
  opt.step(0.1, 0.0);
  EXPECT_EQ(P.w.data().to_double_vector(), w0);
  EXPECT_NEAR(opt.grad_norm(), std::sqrt([&] {
                double s = 0;
                for (double g : P.b.grad().to_double_vector()) s += g * g;
                return s;
              }()),
              1e-6);
}

// A NaN or inf gradient drops the whole update: parameters, moments and the step count stay, so
// the next finite step is exactly the one a run that never saw the bad gradient would take.
TEST(AdamW, NonFiniteGradientDropsTheUpdate) {
  for (float bad : {std::nanf(""), INFINITY}) {
    Params P, Q;
    Generator gen(5);
    for (Variable* v : {&P.w, &P.e, &P.b}) fill_random(v->data(), gen, 0.5);
    for (auto [p, q] : {std::pair{&P.w, &Q.w}, {&P.e, &Q.e}, {&P.b, &Q.b}}) q->data().copy_from(p->data());
    AdamW opt(P.named(), AdamWOptions{}), clean(Q.named(), AdamWOptions{});
    std::vector<Variable*> ps = {&P.w, &P.e, &P.b}, qs = {&Q.w, &Q.e, &Q.b};
    auto set_grads = [&](uint64_t seed) {
      Generator g(seed);
      for (size_t k = 0; k < ps.size(); ++k) {
        Tensor grad = Tensor::empty(ps[k]->shape(), ps[k]->dtype(), ps[k]->device());
        fill_random(grad, g, 0.1);
        // Into the gradient buffers the optimizer owns (views of its flat buffer).
        ps[k]->grad_slot().buffer.copy_from(grad);
        qs[k]->grad_slot().buffer.copy_from(grad);
      }
    };
    set_grads(11);
    opt.step(1e-2, 1.0);
    clean.step(1e-2, 1.0);
    auto before = P.w.data().to_double_vector();
    auto m_before = opt.state("w").m.to_double_vector();
    set_grads(12);
    Tensor e_grad = P.e.grad();  // shares the gradient's storage
    e_grad.data<float>()[3] = bad;  // one bad element anywhere
    double norm = opt.step(1e-2, 1.0);
    EXPECT_FALSE(std::isfinite(norm));
    EXPECT_EQ(opt.step_count(), 1) << "a dropped update is not counted";
    EXPECT_EQ(P.w.data().to_double_vector(), before);
    EXPECT_EQ(opt.state("w").m.to_double_vector(), m_before);
    for (double x : P.e.data().to_double_vector()) EXPECT_TRUE(std::isfinite(x));
    set_grads(13);
    opt.step(1e-2, 1.0);
    clean.step(1e-2, 1.0);
    for (size_t k = 0; k < ps.size(); ++k)
      EXPECT_EQ(ps[k]->data().to_double_vector(), qs[k]->data().to_double_vector()) << "tensor " << k;
  }
}

}  // namespace
}  // namespace nd::train
