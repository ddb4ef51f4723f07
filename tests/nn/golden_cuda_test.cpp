// The PyTorch golden test on the GPU in f32: the CUDA kernels reproduce PyTorch's logits, loss,
// gradients and 10 AdamW steps within the CPU test's f32 bounds.
#include "nn/golden_check.h"

namespace nd::golden {
namespace {

class GoldenCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
  }
};

TEST_F(GoldenCudaTest, LogitsLossAndGradientsMatchPyTorchInF32) {
  check_forward_backward(DType::F32, {1e-4, 1e-6, 1e-8}, Device::cuda(0));
}

TEST_F(GoldenCudaTest, TenAdamWStepsMatchPyTorch) { check_ten_adamw_steps(Device::cuda(0)); }

}  // namespace
}  // namespace nd::golden
