// FP8 quantisation on the CPU, the reference for the GPU's: a tensor scaled, encoded to E4M3 or
// E5M2 codes (kernels/fp8_format.h) and its amax (the largest magnitude before scaling, which the
// delayed scaling of train/fp8_scaling.h records), and codes decoded back with the inverse scale.
#pragma once
#include <cstdint>

#include "kernels/fp8_format.h"

namespace nd::cpu {

// codes (n) = encode(x (n) * scale); returns max |x| over the elements (NaN when one is NaN, inf
// when one is infinite), so a non-finite input is seen by the scaling rather than hidden by saturation.
float fp8_quantize(const float* x, int64_t n, float scale, Fp8Format format, uint8_t* codes);

// x (n) = decode(codes (n)) * scale_inv.
void fp8_dequantize(const uint8_t* codes, int64_t n, float scale_inv, Fp8Format format, float* x);

}  // namespace nd::cpu
