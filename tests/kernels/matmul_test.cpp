// The CPU matmul (CBLAS) against a triple loop in double, over odd and tall/wide shapes (which
// cut BLAS kernel tiles and, large enough, go multi-threaded), all four transpose combinations
// (which set the leading dimensions), and beta = 0 (C not read), 1 and 0.5.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "tensor/error.h"

namespace nd {
namespace {

template <typename T>
std::vector<T> random_vector(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// C = op(A) op(B) + beta C, in double, straight from the definition.
template <typename T>
std::vector<double> naive_matmul(const std::vector<T>& A, const std::vector<T>& B, const std::vector<T>& C, int64_t M,
                                 int64_t N, int64_t K, bool trans_a, bool trans_b, double beta) {
  std::vector<double> out(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        double a = trans_a ? A[k * M + i] : A[i * K + k];
        double b = trans_b ? B[j * K + k] : B[k * N + j];
        s += a * b;
      }
      out[i * N + j] = s + (beta == 0 ? 0.0 : beta * C[i * N + j]);
    }
  return out;
}

template <typename T>
void check_matmul(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, double beta, double tol) {
  std::mt19937 rng(static_cast<unsigned>(M * 7919 + N * 104729 + K * 31 + trans_a * 2 + trans_b));
  std::vector<T> A = random_vector<T>(M * K, rng), B = random_vector<T>(K * N, rng), C = random_vector<T>(M * N, rng);
  std::vector<double> expected = naive_matmul(A, B, C, M, N, K, trans_a, trans_b, beta);
  // beta = 0 must not read C: poison it so a read shows up as NaN.
  if (beta == 0) std::fill(C.begin(), C.end(), std::numeric_limits<T>::quiet_NaN());
  cpu::matmul<T>(A.data(), B.data(), C.data(), M, N, K, trans_a, trans_b, static_cast<T>(beta));
  int bad = 0;
  for (int64_t i = 0; i < M * N; ++i) {
    double err = std::abs(C[i] - expected[i]);
    if (!(err <= tol * (1.0 + std::abs(expected[i]))) && ++bad <= 3)
      ADD_FAILURE() << "M=" << M << " N=" << N << " K=" << K << " ta=" << trans_a << " tb=" << trans_b
                    << " beta=" << beta << ": C[" << i << "] = " << C[i] << ", expected " << expected[i];
  }
  EXPECT_EQ(bad, 0);
}

struct MatmulCase {
  int64_t M, N, K;
};

// Shapes below, at and across typical register-tile and K-block (256) edges; the larger ones are
// big enough for the BLAS to share them out to threads.
const MatmulCase kCases[] = {{1, 1, 1},     {1, 7, 3},      {5, 1, 9},     {13, 17, 19},  {12, 32, 256}, {25, 33, 257},
                             {37, 70, 300}, {100, 70, 300}, {400, 45, 40}, {33, 4100, 3}, {131, 97, 513}};

TEST(Matmul, FloatMatchesNaiveOverShapesTransposesAndBeta) {
  for (const MatmulCase& c : kCases)
    for (int t = 0; t < 4; ++t)
      for (double beta : {0.0, 1.0, 0.5})
        check_matmul<float>(c.M, c.N, c.K, t & 1, t & 2, beta, 1e-5 * std::sqrt(c.K + 1.0));
}

TEST(Matmul, DoubleMatchesNaiveOverShapesTransposesAndBeta) {
  for (const MatmulCase& c : kCases)
    for (int t = 0; t < 4; ++t)
      for (double beta : {0.0, 1.0}) check_matmul<double>(c.M, c.N, c.K, t & 1, t & 2, beta, 1e-12 * (c.K + 1.0));
}

// Attention calls matmul from inside its parallel loop over heads: concurrent calls on distinct
// buffers must each get their own result.
TEST(Matmul, ConcurrentCallsFromParallelThreadsMatchNaive) {
  constexpr int kCalls = 8;
  constexpr int64_t M = 70, N = 45, K = 33;
  std::mt19937 rng(7);
  std::vector<std::vector<double>> A(kCalls), B(kCalls), C(kCalls, std::vector<double>(M * N));
  for (int c = 0; c < kCalls; ++c) {
    A[c] = random_vector<double>(M * K, rng);
    B[c] = random_vector<double>(N * K, rng);
  }
  // Four threads even under OMP_NUM_THREADS=1 (as ctest runs), so the calls do overlap.
#pragma omp parallel for num_threads(4) schedule(static, 1)
  for (int c = 0; c < kCalls; ++c) cpu::matmul<double>(A[c].data(), B[c].data(), C[c].data(), M, N, K, false, true, 0.0);
  for (int c = 0; c < kCalls; ++c) {
    std::vector<double> expected = naive_matmul(A[c], B[c], C[c], M, N, K, false, true, 0.0);
    for (int64_t i = 0; i < M * N; ++i) ASSERT_NEAR(C[c][i], expected[i], 1e-12 * (K + 1.0)) << "call " << c;
  }
}

TEST(Matmul, DimensionBeyondBlasIntRangeIsAnError) {
  EXPECT_THROW(cpu::matmul<float>(nullptr, nullptr, nullptr, int64_t{1} << 31, 1, 1, false, false, 0.0f), Error);
}

TEST(Matmul, EmptyInnerDimensionScalesC) {
  std::vector<float> C = {1, 2, 3, 4, 5, 6};
  cpu::matmul<float>(nullptr, nullptr, C.data(), 2, 3, 0, false, false, 2.0f);
  EXPECT_EQ(C, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  cpu::matmul<float>(nullptr, nullptr, C.data(), 2, 3, 0, false, false, 0.0f);
  EXPECT_EQ(C, (std::vector<float>(6, 0.0f)));
}

}  // namespace
}  // namespace nd
