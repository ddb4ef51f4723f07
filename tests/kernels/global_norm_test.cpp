// cpu::sum_of_squares against a serial long-double sum, and cpu::scale_inplace.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "kernels/cpu/global_norm.h"

namespace nd {
namespace {

long double naive_sum_of_squares(const std::vector<double>& x) {
  long double s = 0;
  for (double xi : x) s += static_cast<long double>(xi) * xi;
  return s;
}

TEST(GlobalNorm, SumOfSquaresMatchesNaiveSum) {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{100003}}) {
    std::vector<double> x = test::random_f64({n}, static_cast<uint64_t>(n), 3.0).to_double_vector();
    std::vector<float> xf(x.begin(), x.end());
    std::vector<double> xf_as_double(xf.begin(), xf.end());
    const double want = static_cast<double>(naive_sum_of_squares(x));
    const double want_f = static_cast<double>(naive_sum_of_squares(xf_as_double));
    EXPECT_NEAR(cpu::sum_of_squares(x.data(), n), want, 1e-12 * want) << "n " << n;
    // Accumulated in double, the f32 input loses nothing beyond its own rounding.
    EXPECT_NEAR(cpu::sum_of_squares(xf.data(), n), want_f, 1e-12 * want_f) << "n " << n;
  }
}

TEST(GlobalNorm, EmptyIsZero) {
  float x = 5.f;
  EXPECT_EQ(cpu::sum_of_squares(&x, 0), 0.0);
}

TEST(GlobalNorm, ScaleInplaceMultipliesEveryElement) {
  const int64_t n = 50001;
  std::vector<double> x = test::random_f64({n}, 3).to_double_vector();
  std::vector<double> original = x;
  std::vector<float> xf(x.begin(), x.end()), original_f = xf;
  cpu::scale_inplace(xf.data(), n, 0.25f);
  cpu::scale_inplace(x.data(), n, -2.0);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(xf[i], original_f[i] * 0.25f);
    EXPECT_EQ(x[i], original[i] * -2.0);
  }
}

}  // namespace
}  // namespace nd
