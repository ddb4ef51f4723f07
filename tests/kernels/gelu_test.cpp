// The f32 GELU kernels (vectorised spans, cloned per instruction set) against the f64 kernels on
// inputs that cross several spans and end in a partial one: forward, backward as a first
// contribution, accumulating, and in place as linear_dgelu_backward calls it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gelu.h"

namespace nd::cpu {
namespace {

// exp(-2u) in f32 is only as exact as 2u rounded to f32: a relative error of about |2u| ulp
// (the bound gelu_grad_test uses for the same kernel).
double tolerance(double x, double value) {
  const double two_u = 2 * 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return (2e-6 + 3e-7 * std::abs(two_u)) * std::abs(value) + 2e-6;
}

TEST(GeluKernel, F32SpansMatchTheF64Kernel) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const int64_t n = 3 * (1 << 14) + 1000 + seed;  // several spans and a partial one
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 3.0);
    std::vector<float> x(n), dout(n), acc(n);
    std::vector<double> xd(n), doutd(n), accd(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(normal(rng));
      dout[i] = static_cast<float>(normal(rng));
      acc[i] = static_cast<float>(normal(rng));
      xd[i] = x[i], doutd[i] = dout[i], accd[i] = acc[i];
    }
    std::vector<float> y(n), dx(n, std::nanf("")), in_place(dout);
    std::vector<double> yd(n), dxd(n);
    gelu_forward(x.data(), y.data(), n);
    gelu_forward(xd.data(), yd.data(), n);
    gelu_backward(x.data(), dout.data(), GradDest<float>{dx.data(), false}, n);
    gelu_backward(xd.data(), doutd.data(), GradDest<double>{dxd.data(), false}, n);
    gelu_backward(x.data(), dout.data(), GradDest<float>{acc.data(), true}, n);
    gelu_backward(xd.data(), doutd.data(), GradDest<double>{accd.data(), true}, n);
    gelu_backward(x.data(), in_place.data(), GradDest<float>{in_place.data(), false}, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      bad += std::abs(y[i] - yd[i]) > tolerance(xd[i], yd[i]);
      bad += std::abs(dx[i] - dxd[i]) > tolerance(xd[i], dxd[i]);
      bad += std::abs(acc[i] - accd[i]) > tolerance(xd[i], dxd[i]) + 1e-6 * std::abs(accd[i]);
      bad += in_place[i] != dx[i];
      if (bad > 0) {
        ADD_FAILURE() << "seed " << seed << ", element " << i << " of " << n << ": x " << x[i] << ", y " << y[i]
                      << " vs " << yd[i] << ", dx " << dx[i] << " vs " << dxd[i] << ", accumulated " << acc[i]
                      << " vs " << accd[i] << ", in place " << in_place[i];
        break;
      }
    }
  }
}

}  // namespace
}  // namespace nd::cpu
