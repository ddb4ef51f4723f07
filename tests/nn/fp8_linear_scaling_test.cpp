// The FP8 linears' delayed scaling (nn/fp8_linear_scaling.h) on CPU memory: each layer's scalars
// are its own view of one tensor, starting at scale 1 / amax 0; end_step turns the amaxes a step
// left there into the next scales (fp8 max / the history's max, E4M3 for x and w, E5M2 for the
// output's gradient) and zeroes them; a quiet step keeps the scale while the history remembers.
#include <gtest/gtest.h>

#include <cstdint>

#include "autograd/ops/fp8_linear.h"
#include "nn/fp8_linear_scaling.h"
#include "tensor/error.h"

namespace nd::nn {
namespace {

// Tensor t's scale and amax in a layer's scalars (the record layout of ops/fp8_linear.h).
float& scale(float* v, int t) { return v[t * ops::kFp8TensorScalars + ops::kFp8Scale]; }
float& amax(float* v, int t) { return v[t * ops::kFp8TensorScalars + ops::kFp8Amax]; }
float& scale_inv(float* v, int t) { return v[t * ops::kFp8TensorScalars + ops::kFp8ScaleInv]; }

TEST(Fp8LinearScaling, AmaxesLeftByAStepBecomeTheNextScales) {
  Fp8LinearScaling s(Device::cpu(), 2);
  Tensor a = s.add("h.0.attn.c_attn", {});
  Tensor b = s.add("h.0.attn.c_proj", {true, true, false});
  EXPECT_THROW(s.add("lm_head", {}), Error);  // capacity 2
  ASSERT_EQ(a.numel(), ops::kFp8LinearScalars);
  float* va = a.data<float>();
  float* vb = b.data<float>();
  // cuBLASLt reads scale_inv through a pointer it wants 16-byte aligned: every record's is.
  for (int t = 0; t < 3; ++t) EXPECT_EQ(reinterpret_cast<uintptr_t>(&scale_inv(vb, t)) % 16, 0u) << t;
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(scale(va, t), 1.0f);
    EXPECT_EQ(amax(va, t), 0.0f);
    EXPECT_EQ(scale_inv(va, t), 1.0f);
  }
  amax(va, 0) = 2.0f, amax(va, 1) = 0.5f, amax(va, 2) = 1.0f / 64;  // what the kernels would fold in
  amax(vb, 0) = 4.0f;
  s.end_step(nullptr);
  EXPECT_EQ(scale(va, 0), 224.0f);         // 448 / 2
  EXPECT_EQ(scale(va, 1), 896.0f);         // 448 / 0.5
  EXPECT_EQ(scale(va, 2), 57344.0f * 64);  // E5M2 for the gradient
  EXPECT_EQ(scale(vb, 0), 112.0f);
  EXPECT_EQ(scale(vb, 1), 1.0f);  // never seen: stays 1
  for (int t = 0; t < 3; ++t) EXPECT_EQ(amax(va, t), 0.0f) << "amax " << t << " not zeroed";
  s.end_step(nullptr);  // a step that quantised nothing
  EXPECT_EQ(scale(va, 0), 224.0f);
  EXPECT_EQ(s.scaling().tensor(s.scaling().index_of("h.0.attn.c_proj.x")).history.count(), 2);
  EXPECT_TRUE(s.scaling().tensor(s.scaling().index_of("h.0.attn.c_proj.w")).sharded);
}

}  // namespace
}  // namespace nd::nn
