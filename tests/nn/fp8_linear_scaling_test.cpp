// The FP8 linears' delayed scaling (nn/fp8_linear_scaling.h) on CPU memory: each layer's scalars
// are its own view of one tensor, starting at scale 1 / amax 0; end_step turns the amaxes a step
// left there into the next scales (fp8 max / the history's max, E4M3 for x and w, E5M2 for the
// output's gradient) and zeroes them; a quiet step keeps the scale while the history remembers.
#include <gtest/gtest.h>

#include "nn/fp8_linear_scaling.h"
#include "tensor/error.h"

namespace nd::nn {
namespace {

TEST(Fp8LinearScaling, AmaxesLeftByAStepBecomeTheNextScales) {
  Fp8LinearScaling s(Device::cpu(), 2);
  Tensor a = s.add("h.0.attn.c_attn", {});
  Tensor b = s.add("h.0.attn.c_proj", {true, true, false});
  EXPECT_THROW(s.add("lm_head", {}), Error);  // capacity 2
  ASSERT_EQ(a.numel(), 9);
  EXPECT_EQ(a.to_double_vector(), (std::vector<double>{1, 0, 1, 1, 0, 1, 1, 0, 1}));
  float* va = a.data<float>();
  float* vb = b.data<float>();
  va[1] = 2.0f, va[4] = 0.5f, va[7] = 1.0f / 64;  // what the kernels would fold in
  vb[1] = 4.0f;
  s.end_step(nullptr);
  EXPECT_EQ(va[0], 224.0f);             // 448 / 2
  EXPECT_EQ(va[3], 896.0f);             // 448 / 0.5
  EXPECT_EQ(va[6], 57344.0f * 64);      // E5M2 for the gradient
  EXPECT_EQ(vb[0], 112.0f);
  EXPECT_EQ(vb[3], 1.0f);               // never seen: stays 1
  for (int i : {1, 4, 7}) EXPECT_EQ(va[i], 0.0f) << "amax " << i << " not zeroed";
  s.end_step(nullptr);  // a step that quantised nothing
  EXPECT_EQ(va[0], 224.0f);
  EXPECT_EQ(s.scaling().tensor(s.scaling().index_of("h.0.attn.c_proj.x")).history.count(), 2);
  EXPECT_TRUE(s.scaling().tensor(s.scaling().index_of("h.0.attn.c_proj.w")).sharded);
}

}  // namespace
}  // namespace nd::nn
