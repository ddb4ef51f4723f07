// Delayed scaling's bookkeeping (nn/fp8_scaling.h) against closed-form cases: the scale formula
// with its margin, the amax window (the max over the last `length` steps, older ones forgotten),
// a step quantising with the scale of the steps before it, non-finite amaxes kept out, and the
// history's order for checkpoints.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/fp8_scaling.h"
#include "tensor/error.h"

namespace nd::nn {
namespace {

TEST(Fp8Scaling, ScaleIsMaxOverAmaxOverTwoToTheMargin) {
  EXPECT_EQ(delayed_scale(448.0, 2.0, 0, 1.0), 224.0);
  EXPECT_EQ(delayed_scale(448.0, 2.0, 3, 1.0), 28.0);
  EXPECT_EQ(delayed_scale(57344.0, 0.25, 1, 1.0), 114688.0);
  EXPECT_EQ(delayed_scale(448.0, 0.0, 0, 5.0), 5.0);       // nothing seen: keep the scale
  EXPECT_EQ(delayed_scale(448.0, INFINITY, 0, 5.0), 5.0);
  EXPECT_EQ(delayed_scale(448.0, NAN, 0, 5.0), 5.0);
}

TEST(Fp8Scaling, HistoryIsTheMaxOfTheLastLengthSteps) {
  AmaxHistory h(3);
  EXPECT_EQ(h.max(), 0.0f);
  h.push(5.0f);
  h.push(1.0f);
  h.push(2.0f);
  EXPECT_EQ(h.max(), 5.0f);
  h.push(0.5f);  // the 5 falls out of the window
  EXPECT_EQ(h.max(), 2.0f);
  EXPECT_EQ(h.oldest_first(), (std::vector<float>{1.0f, 2.0f, 0.5f}));
  AmaxHistory copy(3);
  copy.assign_oldest_first(h.oldest_first());
  copy.push(0.25f);
  EXPECT_EQ(copy.oldest_first(), (std::vector<float>{2.0f, 0.5f, 0.25f}));
  EXPECT_THROW(AmaxHistory(2).assign_oldest_first({1, 2, 3}), Error);
  EXPECT_THROW(AmaxHistory(0), Error);
  EXPECT_EQ(AmaxHistory(1024).length(), 1024);  // the default window of DelayedScalingOptions
  EXPECT_EQ(DelayedScalingOptions{}.history_length, 1024);
}

TEST(Fp8Scaling, AStepUsesTheScaleOfTheStepsBeforeIt) {
  DelayedScalingOptions o;
  o.history_length = 2;
  o.margin = 1;
  DelayedScaling ds(o);
  const int x = ds.add("h.0.mlp.fc.x", Fp8Format::E4M3, false);
  const int g = ds.add("h.0.mlp.fc.dy", Fp8Format::E5M2, false);
  EXPECT_THROW(ds.add("h.0.mlp.fc.x", Fp8Format::E4M3, false), Error);
  EXPECT_EQ(ds.index_of("h.0.mlp.fc.dy"), g);
  EXPECT_EQ(ds.tensor(x).scale, 1.0f);  // the first step quantises unscaled
  ds.record_amax(x, 4.0f);
  ds.record_amax(x, 7.0f);  // a tensor quantised twice in a step: the larger counts
  ds.record_amax(g, 1.0f / 64);
  ds.update(nullptr);
  EXPECT_EQ(ds.tensor(x).scale, 32.0f);           // 448 / 7 / 2
  EXPECT_EQ(ds.tensor(g).scale, 57344.0f * 32);   // 57344 * 64 / 2
  ds.record_amax(x, 1.75f);
  ds.update(nullptr);
  EXPECT_EQ(ds.tensor(x).scale, 32.0f);  // 7 is still in the window of 2
  EXPECT_EQ(ds.tensor(g).scale, 57344.0f * 32);  // unquantised this step: amax 0 joins, max unchanged
  ds.record_amax(x, 1.75f);
  ds.update(nullptr);
  EXPECT_EQ(ds.tensor(x).scale, 128.0f);  // 448 / 1.75 / 2
  EXPECT_EQ(ds.tensor(x).scale_inv(), 1.0f / 128);
}

TEST(Fp8Scaling, NonFiniteAmaxStaysOutOfTheHistory) {
  DelayedScaling ds;
  const int x = ds.add("x", Fp8Format::E4M3, false);
  ds.record_amax(x, 2.0f);
  ds.update(nullptr);
  ds.record_amax(x, NAN);
  ds.record_amax(x, 3.0f);  // NaN sticks for the step
  ds.update(nullptr);
  ds.record_amax(x, INFINITY);
  ds.update(nullptr);
  EXPECT_EQ(ds.tensor(x).history.count(), 1);
  EXPECT_EQ(ds.tensor(x).scale, 224.0f);
}

}  // namespace
}  // namespace nd::nn
