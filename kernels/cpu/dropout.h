// Inverted dropout on the CPU. Element i is kept iff philox_uniform(seed, rng.start() + i, stream) >= p,
// so the mask is a pure function of the draw's counters: backward recomputes it instead of
// storing it, and the CUDA kernel draws the very same mask.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/random.h"

namespace nd::cpu {

// x (n) -> out (n): x / (1 - p) where kept, 0 where dropped.
template <typename T>
void dropout_forward(const T* x, T* out, int64_t n, float p, const PhiloxCounters& rng);

// dout (n) -> dx (n) (+)= dout / (1 - p) where kept, 0 where dropped (the forward's mask).
template <typename T>
void dropout_backward(const T* dout, GradDest<T> dx, int64_t n, float p, const PhiloxCounters& rng);

}  // namespace nd::cpu
