// Residual add on the GPU, and the in-place accumulation its backward (and others) use.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// a (n), b (n) -> out (n) = a + b. T = float or bf16 (summed in f32).
template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n, cudaStream_t stream = nullptr);

// dst (n) += src (n): the backward of add for each input that needs a gradient.
template <typename T>
void accumulate(T* dst, const T* src, int64_t n, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
