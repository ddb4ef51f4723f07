// x *= *factor on the GPU with the factor read from device memory when the kernel runs, so a
// captured CUDA graph replays with the factor of each step (the loss scaler's 1/scale, which
// changes between steps). The CPU has nothing to match: there the factor is a host value
// (nd::cpu::scale_inplace).
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// x (n) *= factor[0], in f32 (bf16 and f16 rounded back).
void scale_by_device_scalar(float* x, int64_t n, const float* factor, cudaStream_t stream);
void scale_by_device_scalar(bf16* x, int64_t n, const float* factor, cudaStream_t stream);
void scale_by_device_scalar(f16* x, int64_t n, const float* factor, cudaStream_t stream);

}  // namespace nd::cuda
