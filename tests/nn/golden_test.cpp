// nanodist's GPT against PyTorch on the CPU (tests/golden/gpt_tiny.h5, written by
// scripts/make_golden.py): logits, loss, every gradient, and 10 AdamW steps.
#include "nn/golden_check.h"

namespace nd::golden {
namespace {

// The bar, 1e-5 relative, in float64: the kernels agree with PyTorch to ~1e-10 there.
TEST(GoldenTest, LogitsLossAndGradientsMatchPyTorchInF64) { check_forward_backward(DType::F64, {1e-5, 1e-8, 1e-8}); }

// In float32 (the dtype CPU training runs in) rounding is ~6e-8 per op; sums over C = 32..128
// terms, LayerNorm's division by a standard deviation and softmax's exponentials amplify it to
// ~1e-5 relative on the worst elements (measured: logits within 1.5e-7 absolute, gradients within
// 2e-5 relative). 1e-4 relative leaves room for another summation order while a real bug (a wrong
// index, a missing term) is off by 1e-2 or more.
TEST(GoldenTest, LogitsLossAndGradientsMatchPyTorchInF32) { check_forward_backward(DType::F32, {1e-4, 1e-6, 1e-8}); }

// The optimizer keeps f32 state, so this runs in f32;
// PyTorch itself in f32 stays within 3e-7 of its f64 losses here, so 1e-5 is the bar
// with room to spare.
TEST(GoldenTest, TenAdamWStepsMatchPyTorch) { check_ten_adamw_steps(Device::cpu()); }

}  // namespace
}  // namespace nd::golden
