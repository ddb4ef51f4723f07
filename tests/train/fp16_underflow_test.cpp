// Why fp16 needs loss scaling, shown with the trainer's own pieces on the CPU (the emulated f16
// kernels): a linear layer + cross-entropy whose weight gradients (about 1e-8) lie below half of
// f16's smallest subnormal (2^-24 = 6e-8). Backward in f16 with the plain seed rounds them to zero;
// seeded with the loss scale (65536) they are ordinary f16 numbers, and widened to f32 and unscaled
// (accumulate_into_f32, unscale_grads: the step's sequence) they equal the f32 reference gradient
// of the same rounded inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "dist/parallel/flat_params.h"
#include "tensor/random.h"
#include "train/unscale_grads.h"

namespace nd::train {
namespace {

constexpr int64_t kRows = 512, kIn = 8, kVocab = 16;

struct Problem {
  Tensor x, w, targets;  // f32 values already rounded to f16
};

Problem tiny_gradient_problem() {
  Generator gen(26);
  Problem p;
  // Inputs of ~1e-6 (f16 subnormals): the weight gradient sum_n dlogits[n] x[n] is ~1e-8.
  p.x = Tensor::randn({1, kRows, kIn}, gen, 0.0, 1e-6, DType::F32).to(DType::F16).to(DType::F32);
  p.w = Tensor::randn({kVocab, kIn}, gen, 0.0, 1.0, DType::F32).to(DType::F16).to(DType::F32);
  std::vector<int32_t> t(kRows);
  for (auto& v : t) v = static_cast<int32_t>(gen.next_u64() % kVocab);
  p.targets = Tensor::from_vector(t, {1, kRows});
  return p;
}

// The weight gradient of mean cross-entropy(x wᵀ) in `dtype`, backward seeded with `seed`.
Tensor weight_grad(const Problem& p, DType dtype, double seed) {
  Variable x(p.x.to(dtype), false), w(p.w.to(dtype), true);
  Variable loss = ops::cross_entropy(ops::linear(x, w, Variable()), p.targets);
  loss.backward(Tensor::full({}, seed, ops::loss_dtype(dtype), Device::cpu()));  // the loss is f32 (or f64)
  return w.grad();
}

// The step's path from an f16 gradient to the optimizer's: widened into f32, times 1/scale.
Tensor unscaled_f32(const Tensor& grad, double scale) {
  Tensor main = Tensor::empty({grad.numel()}, DType::F32, Device::cpu());
  dist::accumulate_into_f32(grad.reshape({grad.numel()}), main, /*overwrite=*/true);
  unscale_grads(main, Tensor::full({1}, 1.0 / scale, DType::F32, Device::cpu()));
  return main;
}

double relative_error(const Tensor& got, const Tensor& want) {
  std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

int64_t zeros_in(const Tensor& t) {
  int64_t n = 0;
  for (double v : t.to_double_vector()) n += v == 0.0 ? 1 : 0;
  return n;
}

TEST(Fp16Underflow, GradientsBelowTheSmallestSubnormalVanishWithoutLossScaling) {
  const Problem p = tiny_gradient_problem();
  const Tensor reference = weight_grad(p, DType::F32, 1.0);
  int64_t below_half_subnormal = 0;
  for (double v : reference.to_double_vector()) {
    EXPECT_NE(v, 0.0);
    below_half_subnormal += std::fabs(v) < std::ldexp(1.0, -25) ? 1 : 0;
  }
  ASSERT_GE(below_half_subnormal, reference.numel() * 9 / 10) << "the problem no longer has tiny gradients";

  const Tensor plain = unscaled_f32(weight_grad(p, DType::F16, 1.0), 1.0);
  EXPECT_GE(zeros_in(plain), reference.numel() * 9 / 10) << "f16 kept gradients below its range";
  EXPECT_GT(relative_error(plain, reference), 0.9);
}

TEST(Fp16Underflow, LossScalingKeepsThemAndTheUnscaleInF32RestoresThem) {
  const Problem p = tiny_gradient_problem();
  const Tensor reference = weight_grad(p, DType::F32, 1.0);
  const double scale = 65536.0;  // the trainer's initial scale (train/loss_scaler.h)
  const Tensor scaled = unscaled_f32(weight_grad(p, DType::F16, scale), scale);
  EXPECT_EQ(zeros_in(scaled), 0);
  EXPECT_LT(relative_error(scaled, reference), 1e-2);
}

TEST(Fp16Underflow, UnscalingInF16WouldFlushThemAgain) {
  // Why --dtype fp16 keeps f32 gradients by default: the same unscale applied to the f16 buffer
  // (--grad-dtype f16) rounds the restored values back to zero.
  const Problem p = tiny_gradient_problem();
  const double scale = 65536.0;
  Tensor grad = weight_grad(p, DType::F16, scale).reshape({kVocab * kIn});
  unscale_grads(grad, Tensor::full({1}, 1.0 / scale, DType::F32, Device::cpu()));
  EXPECT_GE(zeros_in(grad), grad.numel() * 9 / 10);
}

}  // namespace
}  // namespace nd::train
