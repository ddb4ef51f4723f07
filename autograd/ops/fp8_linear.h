// ops::fp8_linear: a linear whose GEMMs run in FP8 on the GPU (kernels/cuda/fp8_linear.h): x and w
// in E4M3 forward, the output's gradient in E5M2 backward, bf16 in and out, with delayed scaling's
// per-tensor scales read from a device tensor of the layer (its layout below), where the kernels
// also fold the step's amaxes. Backward keeps the transposed E4M3 codes of x and w (one byte an
// element), not x itself.
#pragma once
#include "autograd/variable.h"

namespace nd::ops {

// The device scalars of one FP8 linear, f32 (kFp8LinearScalars): for x, w and the output's
// gradient in that order, each a record of kFp8TensorScalars (scale_inv, scale, amax, unused). A
// record fills 16 bytes with scale_inv first because cuBLASLt refuses FP8 GEMMs (NOT_SUPPORTED at
// launch) whose scale pointers are not 16-byte aligned. The caller sets the scales and zeroes the
// amaxes between steps (nn/fp8_linear_scaling.h).
constexpr int kFp8TensorScalars = 4;
constexpr int kFp8ScaleInv = 0, kFp8Scale = 1, kFp8Amax = 2;  // offsets inside a record
constexpr int kFp8LinearScalars = 3 * kFp8TensorScalars;

// x (..., K) bf16, w (N, K) bf16, b (N) bf16 or undefined, on a GPU with FP8 tensor cores;
// M = x's rows, N and K multiples of 16 -> x · wᵀ + b, shape (..., N). nd::Error otherwise.
Variable fp8_linear(const Variable& x, const Variable& w, const Variable& b, const Tensor& scalars);

}  // namespace nd::ops
