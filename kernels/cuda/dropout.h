// Inverted dropout on the GPU with the same Philox mask as the CPU: element i is kept iff
// philox_uniform(seed, first + i, rng_stream) >= p, and kept elements are scaled by 1 / (1 - p).
// Backward recomputes the mask instead of storing it.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// x (n) -> out (n). 0 <= p <= 1 (p = 1 drops everything).
template <typename T>
void dropout_forward(const T* x, T* out, int64_t n, float p, uint64_t seed, uint64_t first, uint64_t rng_stream,
                     cudaStream_t stream = nullptr);

// dout (n) -> dx (n) (+)= mask * dout / (1 - p), same (seed, first, rng_stream) as the forward.
template <typename T>
void dropout_backward(const T* dout, GradDest<T> dx, int64_t n, float p, uint64_t seed, uint64_t first,
                      uint64_t rng_stream, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
