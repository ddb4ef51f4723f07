// Inverted dropout on the GPU with the same Philox mask as the CPU: element i is kept iff
// philox_uniform(seed, rng.start() + i, stream) >= p, and kept elements are scaled by 1 / (1 - p).
// Backward recomputes the mask instead of storing it. rng.offset, when set, is device memory.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"
#include "tensor/random.h"

namespace nd::cuda {

// As cpu::dropout_forward (kernels/cpu/dropout.h). 0 <= p <= 1 (p = 1 drops everything).
template <typename T>
void dropout_forward(const T* x, T* out, int64_t n, float p, const PhiloxCounters& rng, cudaStream_t stream = nullptr);

// As cpu::dropout_backward.
template <typename T>
void dropout_backward(const T* dout, GradDest<T> dx, int64_t n, float p, const PhiloxCounters& rng,
                      cudaStream_t stream = nullptr);

}  // namespace nd::cuda
