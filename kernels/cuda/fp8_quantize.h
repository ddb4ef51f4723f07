// FP8 quantisation on the GPU (the CPU reference is kernels/cpu/fp8_quantize.h): x times a scale
// read from device memory (delayed scaling's, which changes between steps without breaking a
// captured graph), cast to E4M3 or E5M2 by the hardware conversion (round to nearest even,
// saturating to the format's max), and the amax of x folded into a device f32 with an atomic max.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/fp8_format.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// codes (n) = fp8(x (n) * scale[0]); *amax = max(*amax, max |x|) (NaN when an element is NaN), so
// the caller zeroes amax once per step and every quantise of the tensor in the step folds into it.
void fp8_quantize(const float* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                  cudaStream_t stream);
void fp8_quantize(const bf16* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                  cudaStream_t stream);

// The same for a row-major matrix x (rows, cols), writing codes (rows, cols) and/or codes_t
// (cols, rows), its transpose (either may be null), through 32 x 32 tiles in shared memory: the
// transposed copies are what Hopper's TN-only FP8 GEMMs need in backward. scale_inv (or null)
// receives 1 / scale[0], the dequantisation factor the GEMM reads.
void fp8_quantize_transpose(const float* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                            uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream);
void fp8_quantize_transpose(const bf16* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                            uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream);

}  // namespace nd::cuda
