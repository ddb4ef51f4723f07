// AdamW on the GPU drops an update whose gradient norm is not finite (global_norm's NaN clip
// factor makes the fused kernel skip): parameters (f32 and bf16 with their f32 masters) and
// moments stay as they were, the step is uncounted, and the next finite step matches the CPU
// reference that never saw the bad gradient.
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/device.h"
#include "tensor/random.h"
#include "train/optimizer.h"

namespace nd::train {
namespace {

class OptimizerNonFiniteCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
  }
};

TEST_F(OptimizerNonFiniteCuda, NonFiniteNormDropsTheUpdate) {
  for (DType dtype : {DType::F32, DType::BF16}) {
    Generator gen(9);
    Tensor w0 = Tensor::randn({64, 33}, gen, 0.0, 0.5);
    Variable gpu(w0.to(Device::cuda(0)).to(dtype), true);
    Variable cpu(w0.to(dtype).to(DType::F32), true);
    AdamW on_gpu({{"w", gpu}}, AdamWOptions{}), on_cpu({{"w", cpu}}, AdamWOptions{});
    auto step_both = [&](uint64_t seed, bool poison) {
      Generator g(seed);
      Tensor grad = Tensor::randn({64, 33}, g, 0.0, 0.1);
      if (poison) grad.data<float>()[100] = std::nanf("");
      gpu.grad_slot().buffer.copy_from(grad.to(dtype).to(Device::cuda(0)));  // the optimizer's flat buffer
      double norm = on_gpu.step(1e-2, 1.0);
      if (!poison) {
        cpu.grad_slot().buffer.copy_from(grad.to(dtype).to(DType::F32));
        on_cpu.step(1e-2, 1.0);
      }
      return norm;
    };
    step_both(1, false);
    std::vector<double> before = gpu.data().to(Device::cpu()).to(DType::F32).to_double_vector();
    std::vector<double> m_before = on_gpu.state("w").m.to(Device::cpu()).to_double_vector();
    EXPECT_FALSE(std::isfinite(step_both(2, true)));
    EXPECT_EQ(on_gpu.step_count(), 1);
    EXPECT_EQ(gpu.data().to(Device::cpu()).to(DType::F32).to_double_vector(), before) << dtype_name(dtype);
    EXPECT_EQ(on_gpu.state("w").m.to(Device::cpu()).to_double_vector(), m_before) << dtype_name(dtype);
    step_both(3, false);
    auto got = gpu.data().to(Device::cpu()).to(DType::F32).to_double_vector();
    auto want = cpu.data().to(dtype).to(DType::F32).to_double_vector();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], dtype == DType::F32 ? 1e-5 : 2e-2) << dtype_name(dtype) << " i " << i;
  }
}

}  // namespace
}  // namespace nd::train
