// Residual add on the GPU and its backward.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// a (n), b (n) -> out (n) = a + b. T = float, bf16 or f16 (summed in f32).
template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n, cudaStream_t stream = nullptr);

// dout (n) -> da (n), db (n): each wanted gradient gets dout (written in the order da, db, so
// da and db may be the same buffer when a + a was taken).
template <typename T>
void add_backward(const T* dout, GradDest<T> da, GradDest<T> db, int64_t n, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
