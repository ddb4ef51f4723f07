// cpu::adamw_update against a scalar re-implementation of the AdamW formula in long double
// (bias-corrected moments, decoupled weight decay applied before the Adam step), over 10 steps.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "kernels/cpu/adamw.h"

namespace nd {
namespace {

struct Hyper {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
};

// One AdamW step on one element, written from the textbook formula.
void reference_step(long double& p, long double g, long double& m, long double& v, const Hyper& h, int step) {
  g *= h.grad_scale;
  m = h.beta1 * m + (1 - static_cast<long double>(h.beta1)) * g;
  v = h.beta2 * v + (1 - static_cast<long double>(h.beta2)) * g * g;
  const long double mhat = m / (1 - std::pow(static_cast<long double>(h.beta1), step));
  const long double vhat = v / (1 - std::pow(static_cast<long double>(h.beta2), step));
  p -= static_cast<long double>(h.lr) * (mhat / (std::sqrt(vhat) + h.eps) + h.weight_decay * p);
}

template <typename T>
void check_ten_steps(const Hyper& h, double rtol) {
  const int64_t n = 1000;
  std::vector<double> p0 = test::random_f64({n}, 1).to_double_vector();
  std::vector<T> param(p0.begin(), p0.end()), m(n, 0), v(n, 0);
  std::vector<long double> ref_p(p0.begin(), p0.end()), ref_m(n, 0), ref_v(n, 0);
  for (int step = 1; step <= 10; ++step) {
    std::vector<double> g64 = test::random_f64({n}, 100 + step, 0.1).to_double_vector();
    std::vector<T> grad(g64.begin(), g64.end());
    cpu::adamw_update(param.data(), grad.data(), m.data(), v.data(), n, h.lr, h.beta1, h.beta2, h.eps,
                      h.weight_decay, step, h.grad_scale);
    for (int64_t i = 0; i < n; ++i) reference_step(ref_p[i], grad[i], ref_m[i], ref_v[i], h, step);
  }
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = static_cast<double>(ref_p[i]);
    if (std::abs(param[i] - want) > rtol * (1 + std::abs(want)) && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": got " << param[i] << ", want " << want;
    EXPECT_NEAR(m[i], static_cast<double>(ref_m[i]), rtol);
    EXPECT_NEAR(v[i], static_cast<double>(ref_v[i]), rtol);
  }
  EXPECT_EQ(bad, 0);
}

TEST(AdamW, MatchesFormulaWithoutWeightDecay) {
  const Hyper h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f};
  check_ten_steps<float>(h, 2e-6);
  check_ten_steps<double>(h, 1e-12);
}

TEST(AdamW, MatchesFormulaWithWeightDecayAndGradScale) {
  const Hyper h{3e-2f, 0.8f, 0.95f, 1e-6f, 0.1f, 0.37f};
  check_ten_steps<float>(h, 2e-6);
  check_ten_steps<double>(h, 1e-12);
}

TEST(AdamW, FirstStepMovesByLearningRate) {
  // Step 1 with no decay: mhat = g, vhat = g^2, so each parameter moves by lr * sign(g) (eps aside).
  std::vector<float> param = {1.f, -2.f, 0.5f}, grad = {0.3f, -4.f, 1e-3f}, m(3, 0), v(3, 0);
  cpu::adamw_update(param.data(), grad.data(), m.data(), v.data(), 3, 0.1f, 0.9f, 0.999f, 1e-12f, 0.f, 1, 1.f);
  EXPECT_NEAR(param[0], 0.9f, 1e-6);
  EXPECT_NEAR(param[1], -1.9f, 1e-6);
  EXPECT_NEAR(param[2], 0.4f, 1e-6);
}

TEST(AdamW, StepZeroIsAnError) {
  float p = 1, g = 1, m = 0, v = 0;
  EXPECT_THROW(cpu::adamw_update(&p, &g, &m, &v, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, 0, 1.f), Error);
}

}  // namespace
}  // namespace nd
