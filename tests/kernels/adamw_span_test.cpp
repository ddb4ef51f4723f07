// The vectorised CPU AdamW (cpu::adamw_update_span, and cpu::adamw_update<float> that splits its
// work over threads) against a plain scalar loop of adamw_element, bit for bit: odd lengths,
// unaligned starts, vector tails, thread ranges, tiny and subnormal values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/adamw_element.h"

namespace nd::cpu {
namespace {

struct State {
  std::vector<float> param, grad, m, v;
};

// Random state over many magnitudes (exponents 2^-140 .. 2^4, so subnormals too); v >= 0.
State random_state(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 4);
  auto draw = [&] { return std::ldexp(mantissa(rng), exponent(rng)); };
  State s;
  for (auto* a : {&s.param, &s.grad, &s.m, &s.v}) {
    a->resize(static_cast<size_t>(n));
    for (float& x : *a) x = draw();
  }
  for (float& x : s.v) x = std::fabs(x);
  if (n > 3) s.grad[3] = 0.0f, s.m[3] = 0.0f, s.v[3] = 0.0f;  // the first step's zero moments
  return s;
}

void scalar_reference(const AdamWScalars<float>& k, State& s, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < begin + n; ++i) adamw_element(k, s.param[i], s.grad[i], s.m[i], s.v[i]);
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const char* what, int64_t n) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && ++bad <= 3)
      ADD_FAILURE() << what << "[" << i << "] of n " << n << ": " << got[i] << " against " << want[i];
  EXPECT_EQ(bad, 0) << what << ", n " << n;
}

const AdamWScalars<float> kScalars[] = {
    adamw_scalars<float>(3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 1.0f),
    adamw_scalars<float>(6e-4f, 0.9f, 0.999f, 1e-8f, 0.0f, 7, 0.37f),
    adamw_scalars<float>(1e-2f, 0.8f, 0.9f, 1e-6f, 0.01f, 1000, 2.5f),
};

TEST(AdamWSpan, GivesTheScalarLoopsBitsOnOddLengthsAndUnalignedStarts) {
  for (const AdamWScalars<float>& k : kScalars)
    for (int64_t n = 0; n <= 70; ++n)
      for (int64_t start : {0, 1, 3, 5}) {
        State want = random_state(start + n, static_cast<unsigned>(100 * n + start)), got = want;
        scalar_reference(k, want, start, n);
        adamw_update_span(k, got.param.data() + start, got.grad.data() + start, got.m.data() + start,
                          got.v.data() + start, n);
        expect_same_bits(got.param, want.param, "param", n);
        expect_same_bits(got.m, want.m, "m", n);
        expect_same_bits(got.v, want.v, "v", n);
      }
}

// adamw_update<float> cuts the work into per-thread ranges of whole cache lines: lengths around
// those cuts and a long one, against the same loop over the whole array.
TEST(AdamWSpan, ThreadedUpdateGivesTheScalarLoopsBits) {
  const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f, scale = 0.9f;
  const int64_t step = 4;
  const AdamWScalars<float> k = adamw_scalars<float>(lr, beta1, beta2, eps, weight_decay, step, scale);
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{31}, int64_t{33}, int64_t{47},
                    int64_t{65}, int64_t{1001}, int64_t{100003}}) {
    State want = random_state(n, static_cast<unsigned>(n)), got = want;
    scalar_reference(k, want, 0, n);
    adamw_update(got.param.data(), got.grad.data(), got.m.data(), got.v.data(), n, lr, beta1, beta2, eps,
                 weight_decay, step, scale);
    expect_same_bits(got.param, want.param, "param", n);
    expect_same_bits(got.m, want.m, "m", n);
    expect_same_bits(got.v, want.v, "v", n);
  }
}

}  // namespace
}  // namespace nd::cpu
