// nn::MLP's choice of ops when only some of its linears are FP8, checked on the CPU: the FP8 ops
// refuse CPU tensors, each naming itself, so the refusal tells which op the MLP called. One FP8
// linear must reach ops::fp8_linear (not the bf16 gelu_mlp, which would drop its quantising); both
// reach ops::fp8_gelu_mlp; none runs.
// (mlp_fp8_mix_cuda_test checks the results of the mixes on a GPU.)
#include <gtest/gtest.h>

#include <string>

#include "nn/fp8_linear_scaling.h"
#include "nn/layers.h"
#include "tensor/error.h"

namespace nd {
namespace {

// The message of the error the MLP's forward raises, "" when it runs.
std::string forward_error(bool fc, bool proj) {
  const nn::BlockShape shape{16, 2, 1, /*bias=*/true, /*dropout=*/0.0f};
  Generator init(1), drop(2);
  nn::MLP mlp(shape, init, nn::Placement{Device::cpu(), DType::F32});
  nn::Fp8LinearScaling scaling(Device::cpu(), 2);
  if (fc) mlp.c_fc().use_fp8(scaling.add("mlp.c_fc", {}));
  if (proj) mlp.c_proj().use_fp8(scaling.add("mlp.c_proj", {}));
  Variable x(Tensor::zeros({2, 3, 16}, DType::F32, Device::cpu()), true);
  try {
    mlp.forward(x, drop);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool mentions(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(MlpFp8Mix, OneFp8LinearGoesThroughFp8LinearNotTheBf16Fusion) {
  EXPECT_TRUE(mentions(forward_error(true, false), "fp8_linear:")) << forward_error(true, false);
  EXPECT_TRUE(mentions(forward_error(false, true), "fp8_linear:")) << forward_error(false, true);
}

TEST(MlpFp8Mix, BothFp8TakeTheFp8Fusion) {
  EXPECT_TRUE(mentions(forward_error(true, true), "fp8_gelu_mlp:")) << forward_error(true, true);
}

TEST(MlpFp8Mix, NoFp8LinearRunsOnTheCpu) { EXPECT_EQ(forward_error(false, false), ""); }

}  // namespace
}  // namespace nd
