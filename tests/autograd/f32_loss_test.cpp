// The loss is f32 whatever the logits' dtype (ops::loss_dtype). On the CPU the reduced dtype is f16
// (the emulated GPU kernels; bf16 has no CPU kernels): the plain, the fused (cross_entropy_grad) and
// the vocabulary-parallel cross-entropy of f16 logits give an f32 scalar equal, to f32 precision, to
// the mean computed in double from the same f16 logits, and not on f16's grid; the backward's seed
// is f32 too, so the f16 gradient for a seed of 1/3 is the f32 gradient of the same logits rounded
// once, which a seed rounded to f16 first would not give; f32 logits keep their f32 loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"

namespace nd {
namespace {

constexpr int64_t kB = 3, kT = 7, kVp = 67, kV = 65;  // columns 65 and 66 are padding

Tensor targets_with_ignored() {
  std::vector<int32_t> t(kB * kT);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>((i * 29 + 7) % kV);
  return Tensor::from_vector(t, {kB, kT});
}

// Logits of spread 3 (losses near 4, where f16's spacing is 2^-8), rounded to f16, kept as f32.
Tensor f16_logits(uint64_t seed) { return test::random_f64({kB, kT, kVp}, seed, 3.0).to(DType::F16).to(DType::F32); }

// The mean over counted rows of log(sum over [0, V) of exp) - the target's logit, in double.
double reference_loss(const Tensor& logits_f32, const Tensor& targets) {
  const std::vector<double> x = logits_f32.to_double_vector();
  const std::vector<double> t = targets.to_double_vector();
  double total = 0;
  int counted = 0;
  for (size_t row = 0; row < t.size(); ++row) {
    if (t[row] < 0) continue;
    const double* r = x.data() + row * kVp;
    double m = r[0], sum = 0;
    for (int64_t j = 1; j < kV; ++j) m = std::max(m, r[j]);
    for (int64_t j = 0; j < kV; ++j) sum += std::exp(r[j] - m);
    total += m + std::log(sum) - r[static_cast<int64_t>(t[row])];
    ++counted;
  }
  return total / counted;
}

// True when x is a whole multiple of f16's spacing at |x| (what a loss rounded to f16 would be).
bool on_f16_grid(double x) {
  const double spacing = std::ldexp(1.0, std::ilogb(x) - 10);
  return std::fmod(x, spacing) == 0.0;
}

const ops::RowStatsReduce kOneRank = [](Tensor&) {};

// |loss - reference| within a few f32 roundings of the reference (f16's spacing is ~8000 times wider).
void expect_f32_mean(const Variable& loss, double reference, const std::string& what) {
  ASSERT_EQ(loss.dtype(), DType::F32) << what;
  const double got = loss.data().item();
  EXPECT_NEAR(got, reference, 1e-6 * std::abs(reference)) << what;
  EXPECT_FALSE(on_f16_grid(got)) << what << ": " << got << " lies on f16's grid";
}

TEST(F32Loss, F16LogitsGiveTheF32MeanOnEveryPath) {
  const Tensor targets = targets_with_ignored();
  for (uint64_t seed : {1, 2, 3}) {
    const Tensor x = f16_logits(seed);
    const double want = reference_loss(x, targets);
    const std::string what = "seed " + std::to_string(seed);
    expect_f32_mean(ops::cross_entropy(Variable(x.to(DType::F16), true), targets, kV), want, what + " plain");
    for (bool overwrite : {false, true}) {
      const ops::LossGradient told{Tensor::full(Shape{}, 0.25, DType::F32), overwrite};
      expect_f32_mean(ops::cross_entropy(Variable(x.to(DType::F16), true), targets, kV, told), want,
                      what + (overwrite ? " fused, overwriting" : " fused"));
      expect_f32_mean(ops::vocab_parallel_cross_entropy(Variable(x.to(DType::F16), true), targets, 0, kV, kOneRank,
                                                        kOneRank, told),
                      want, what + " vocabulary-parallel, fused");
    }
    expect_f32_mean(ops::vocab_parallel_cross_entropy(Variable(x.to(DType::F16), true), targets, 0, kV, kOneRank,
                                                      kOneRank),
                    want, what + " vocabulary-parallel");
    // f32 logits: the same kernel on unrounded inputs, an f32 loss as before.
    expect_f32_mean(ops::cross_entropy(Variable(x, true), targets, kV), want, what + " f32 logits");
  }
}

// The f16 logits' gradient for `seed`, from the plain op (seeded after the forward) or the fused one.
Tensor f16_gradient(const Tensor& x, const Tensor& targets, float seed, bool fused) {
  Variable logits(x.to(DType::F16), true);
  const Tensor s = Tensor::full(Shape{}, seed, DType::F32);
  Variable loss = fused ? ops::cross_entropy(logits, targets, kV, {s, false}) : ops::cross_entropy(logits, targets, kV);
  loss.backward(s);
  return logits.grad();
}

// The f32 kernel's gradient of the same logits for `seed`, rounded once to f16.
Tensor f32_gradient_rounded(const Tensor& x, const Tensor& targets, float seed) {
  Variable logits(x, true);
  ops::cross_entropy(logits, targets, kV).backward(Tensor::full(Shape{}, seed, DType::F32));
  return logits.grad().to(DType::F16);
}

int64_t differing_bits(const Tensor& a, const Tensor& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) n += a.data<f16>()[i].bits != b.data<f16>()[i].bits;
  return n;
}

TEST(F32Loss, TheSeedIsNotRoundedToF16) {
  const Tensor targets = targets_with_ignored(), x = f16_logits(4);
  const float third = 1.0f / 3.0f;                          // the trainer's seed at grad-accum 3
  const float third_in_f16 = f16_to_f32(f32_to_f16(third));  // what an f16 seed held: 0.33325195
  const Tensor want = f32_gradient_rounded(x, targets, third);
  for (bool fused : {false, true}) {
    const Tensor got = f16_gradient(x, targets, third, fused);
    EXPECT_EQ(differing_bits(got, want), 0) << (fused ? "fused" : "plain");
  }
  // The test can tell: an f16 seed's gradient differs in some elements.
  EXPECT_GT(differing_bits(f32_gradient_rounded(x, targets, third_in_f16), want), 0);
  // A power of two is the same number in f16 and f32: that gradient is what it always was.
  EXPECT_EQ(differing_bits(f16_gradient(x, targets, 0.25f, true), f32_gradient_rounded(x, targets, 0.25f)), 0);
}

TEST(F32Loss, SeedsOfTheLogitsDtypeAreErrors) {
  Variable logits(f16_logits(5).to(DType::F16), true);
  test::expect_error_mentioning(
      [&] {
        ops::cross_entropy(logits, targets_with_ignored(), kV, {Tensor::full(Shape{}, 0.5, DType::F16), false});
      },
      {"cross_entropy", "seed", "f32"});
  Variable loss = ops::cross_entropy(logits, targets_with_ignored(), kV);
  test::expect_error_mentioning([&] { loss.backward(Tensor::full(Shape{}, 1.0, DType::F16)); }, {"backward", "f32"});
}

}  // namespace
}  // namespace nd
