// The fixture of the tiny --fp8 training tests: skips without a GPU with FP8 tensor cores (compute
// capability 8.9+), writes the tiny corpus, and gives a bf16 config whose GEMM sides are multiples
// of 16 (width 32, 64 tokens a step), as the FP8 GEMMs need. Base: ::testing::Test or TestWithParam.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda_test_util.h"
#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train::testing {

template <class Base = ::testing::Test>
class TinyFp8Run : public Base {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
#if NANODIST_WITH_CUDA
    if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
#endif
    write_tiny_data(dir_ / "data");
  }

  // bf16 on the GPU with f32 gradients and lr 1e-2; --fp8 is the test's to set.
  TrainConfig tiny_gpu_config(const std::string& out) {
    TrainConfig c = tiny_config(dir_ / "data", dir_ / out);
    c.model.n_embd = 32;
    c.optim.lr = 1e-2;
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    c.precision.grad_dtype = DType::F32;
    return c;
  }

  TempDir dir_;
};

}  // namespace nd::train::testing
