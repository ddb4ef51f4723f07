// What the per-layer statistics kernels (kernels/{cpu,cuda}/layer_stats.*) read and write: one
// slot per tensor, four sums per slot, and the thresholds that define underflow and saturation.
// One definition for both backends and for the trainer's train/layer_stats.cpp.
#pragma once
#include <cstdint>

namespace nd {

// The sums a slot adds into its four doubles of the output, at out[slot.out + k]:
enum TensorStat : int {
  kSumOfSquares = 0,    // sum of x^2, or of (x - ref)^2 when the slot has a reference
  kBf16Underflow = 1,   // count of 0 < |x| <= kBf16FlushBelow: values bf16 rounds to zero
  kFp16Underflow = 2,   // count of 0 < |x| <= kFp16FlushBelow: values fp16 rounds to zero
  kGeluSaturated = 3,   // count of x < kGeluSaturatedBelow (on GELU inputs: gradient below 0.012)
  kStatsPerSlot = 4
};

// Half the smallest subnormal of each format: anything of this magnitude or less rounds (to
// nearest even) to zero. bf16's smallest subnormal is 2^-133, fp16's 2^-24.
constexpr float kBf16FlushBelow = 0x1p-134f;
constexpr float kFp16FlushBelow = 0x1p-25f;
// GELU(x) = x Phi(x): below -3 its output is under 0.004 in magnitude and its derivative under
// 0.012, so the unit passes (almost) no signal and no gradient. Above +3 GELU is the identity
// (derivative within 0.012 of 1), which is linear, not saturated, so only the negative side counts.
constexpr float kGeluSaturatedBelow = -3.0f;

template <typename T>
struct StatSlot {
  const T* x = nullptr;    // n values
  const T* ref = nullptr;  // nullptr, or n values: the sum of squares is then of (x - ref)
  int64_t n = 0;
  int64_t out = 0;         // index of the slot's first output double
};

}  // namespace nd
