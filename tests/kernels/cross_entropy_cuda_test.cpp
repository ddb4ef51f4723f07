// CUDA fused cross-entropy against the CPU kernel through ops::cross_entropy: loss and dlogits,
// padded vocabulary, ignored targets (-1), f32 and bf16. And the cross_entropy_grad fusion (the
// forward writes dlogits for an announced seed) on the GPU against the unfused op on the GPU and
// the fused op on the CPU: seeded with the announced tensor, with the logits kept or overwritten,
// and seeded with another tensor (the fallback). The loss is f32 for bf16 and f16 logits too: every
// path's loss (plain, fused, vocabulary-parallel) equals the f64 mean of the same rounded logits at
// f32's tolerance, not at bf16's.
#include <cmath>

#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

// seed_grads false: the logits have no gradient yet, and the GPU writes it instead of adding.
void check_cross_entropy(DType dtype, int64_t B, int64_t T, int64_t Vp, int64_t V, bool seed_grads = true) {
  Generator gen(test_seed());
  std::vector<int32_t> t(B * T);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>(gen.next_u64() % V);
  Tensor targets = Tensor::from_vector(t, {B, T});
  Tensor targets_gpu = targets.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::cross_entropy(v[0], device.is_cpu() ? targets : targets_gpu, V);
      },
      {random_input({B, T, Vp}, gen, dtype, 3.0)}, {true}, dtype, gen,
      "cross_entropy " + std::string(dtype_name(dtype)), seed_grads, ops::loss_dtype(dtype));
}

TEST(CrossEntropyCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_cross_entropy(DType::F32, 2, 9, 256, 200);
  check_cross_entropy(DType::F32, 3, 4, 67, 65);  // rows not 16-byte aligned: scalar path
  check_cross_entropy(DType::F32, 2, 3, 1024, 1024);
  check_cross_entropy(DType::F32, 2, 9, 256, 200, false);
  check_cross_entropy(DType::F32, 3, 4, 67, 65, false);
}

TEST(CrossEntropyCuda, Bf16) {
  ND_SKIP_WITHOUT_GPU();
  check_cross_entropy(DType::BF16, 2, 9, 384, 300);
  check_cross_entropy(DType::BF16, 1, 5, 65, 65);
  check_cross_entropy(DType::BF16, 2, 9, 384, 300, false);
}

// The GPU's fused and unfused paths do the same arithmetic per element (the same row reduction and
// gradient formula), so they agree to rounding; the CPU (f64) is checked at the usual tolerance.
Tolerance fused_vs_unfused(DType dtype) { return dtype == DType::F32 ? Tolerance{1e-6, 1e-6} : Tolerance{1e-3, 8e-3}; }

void check_fused(DType dtype, int64_t B, int64_t T, int64_t Vp, int64_t V, bool overwrite) {
  const std::string what = std::string(dtype_name(dtype)) + " Vp " + std::to_string(Vp) +
                           (overwrite ? " overwrite" : " own buffer");
  Generator gen(test_seed());
  std::vector<int32_t> t(B * T);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>(gen.next_u64() % V);
  Tensor targets = Tensor::from_vector(t, {B, T});
  Tensor targets_gpu = targets.to(Device::cuda(0));
  Tensor x = random_input({B, T, Vp}, gen, dtype, 3.0);
  const double scale = 1.0 / 3.0;  // 1 / grad_accum
  Tensor seed_cpu = Tensor::full(Shape{}, scale, DType::F64);
  const DType loss_dtype = ops::loss_dtype(dtype);  // f32: the seed is the loss's dtype
  Tensor seed_gpu = Tensor::full(Shape{}, scale, loss_dtype, Device::cuda(0));
  Tensor other_seed_gpu = Tensor::full(Shape{}, scale, loss_dtype, Device::cuda(0));  // same value, another tensor
  Tolerance tight = fused_vs_unfused(dtype), tol = tolerance_for(dtype), loss_tol = tolerance_for(loss_dtype);

  Variable unfused(on_gpu(x, dtype), true);
  Variable unfused_loss = ops::cross_entropy(unfused, targets_gpu, V);
  unfused_loss.backward(other_seed_gpu);

  Variable fused(on_gpu(x, dtype), true);
  poison_next_allocation({B, T, Vp}, dtype);  // the forward's dlogits buffer, when it has its own
  Variable fused_loss = ops::cross_entropy(fused, targets_gpu, V, {seed_gpu, overwrite});
  if (overwrite) expect_close(fused.data(), unfused.grad(), tight.atol_rel, tight.rtol, what + " overwritten logits");
  poison_next_allocation({B, T, Vp}, dtype);  // the leaf's gradient buffer
  fused_loss.backward(seed_gpu);
  expect_close(fused_loss.data(), unfused_loss.data(), tight.atol_rel, tight.rtol, what + " loss");
  expect_close(fused.grad(), unfused.grad(), tight.atol_rel, tight.rtol, what + " dlogits");

  // The CPU in f64 from the same (rounded) logits: an f32 reference summing GPT-2's 50k
  // exponentials in another order is itself off by about 1e-5 of an element here and there.
  Variable cpu(x.to(DType::F64), true);
  Variable cpu_loss = ops::cross_entropy(cpu, targets, V, {seed_cpu, overwrite});
  cpu_loss.backward(seed_cpu);
  expect_close(fused_loss.data(), cpu_loss.data(), loss_tol.atol_rel, loss_tol.rtol, what + " loss against the CPU");
  expect_close(fused.grad(), cpu.grad(), tol.atol_rel, tol.rtol, what + " dlogits against the CPU");

  // Seeded with another value: recomputed from the logits, or the overwritten ones rescaled.
  Tensor grad = Tensor::full(Shape{}, 0.7, loss_dtype, Device::cuda(0));
  Variable plain(on_gpu(x, dtype), true), fallback(on_gpu(x, dtype), true);
  ops::cross_entropy(plain, targets_gpu, V).backward(grad);
  ops::cross_entropy(fallback, targets_gpu, V, {seed_gpu, overwrite}).backward(grad);
  // A rescaled bf16 gradient rounds twice.
  const Tolerance fallback_tol = overwrite && dtype != DType::F32 ? tol : tight;
  expect_close(fallback.grad(), plain.grad(), fallback_tol.atol_rel, fallback_tol.rtol, what + " fallback dlogits");
}

TEST(CrossEntropyCuda, FusedGradientF32) {
  ND_SKIP_WITHOUT_GPU();
  for (bool overwrite : {false, true}) {
    check_fused(DType::F32, 2, 9, 256, 200, overwrite);
    check_fused(DType::F32, 3, 4, 67, 65, overwrite);  // rows not 16-byte aligned: scalar path
    check_fused(DType::F32, 1, 3, 50304, 50257, overwrite);  // GPT-2's padded vocabulary
  }
}

TEST(CrossEntropyCuda, FusedGradientBf16) {
  ND_SKIP_WITHOUT_GPU();
  for (bool overwrite : {false, true}) {
    check_fused(DType::BF16, 2, 9, 384, 300, overwrite);
    check_fused(DType::BF16, 1, 5, 65, 65, overwrite);
    check_fused(DType::BF16, 1, 3, 50304, 50257, overwrite);
  }
}

// The loss of bf16 or f16 logits is the kernels' f32 mean: against the f64 CPU loss of the same
// rounded logits within f32's tolerance (a loss rounded to bf16 would be off by up to 2^-8 of its
// binade, 2e-3 to 4e-3 of it; to f16 by up to 2^-11), on the plain, the fused and the
// vocabulary-parallel path, an f32 tensor each time.
void check_f32_loss(DType dtype, int64_t B, int64_t T, int64_t Vp, int64_t V) {
  const std::string what = std::string(dtype_name(dtype)) + " Vp " + std::to_string(Vp);
  Generator gen(test_seed());
  std::vector<int32_t> t(B * T);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>(gen.next_u64() % V);
  Tensor targets = Tensor::from_vector(t, {B, T}), targets_gpu = targets.to(Device::cuda(0));
  Tensor x = random_input({B, T, Vp}, gen, dtype, 3.0);
  const Tensor want = ops::cross_entropy(Variable(x.to(DType::F64)), targets, V).data();
  const Tolerance f32 = tolerance_for(DType::F32);
  const Tensor seed = Tensor::full(Shape{}, 0.25, DType::F32, Device::cuda(0));
  const ops::RowStatsReduce one_rank = [](Tensor&) {};
  const std::vector<std::pair<std::string, Variable>> losses = {
      {"plain", ops::cross_entropy(Variable(on_gpu(x, dtype), true), targets_gpu, V)},
      {"fused", ops::cross_entropy(Variable(on_gpu(x, dtype), true), targets_gpu, V, {seed, true})},
      {"vocabulary-parallel", ops::vocab_parallel_cross_entropy(Variable(on_gpu(x, dtype), true), targets_gpu, 0, V,
                                                                one_rank, one_rank)},
      {"vocabulary-parallel fused", ops::vocab_parallel_cross_entropy(Variable(on_gpu(x, dtype), true), targets_gpu,
                                                                      0, V, one_rank, one_rank, {seed, true})}};
  for (const auto& [path, loss] : losses) {
    EXPECT_EQ(loss.dtype(), DType::F32) << what << " " << path;
    expect_close(loss.data(), want, f32.atol_rel, f32.rtol, what + " " + path + " loss against the f64 mean");
  }
}

TEST(CrossEntropyCuda, ReducedPrecisionLossIsTheF32Mean) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::BF16, DType::F16}) {
    check_f32_loss(dtype, 2, 9, 384, 300);
    check_f32_loss(dtype, 3, 4, 67, 65);  // rows not 16-byte aligned: scalar path
    check_f32_loss(dtype, 2, 5, 50304, 50257);  // GPT-2's padded vocabulary
  }
}

}  // namespace
}  // namespace nd::test
