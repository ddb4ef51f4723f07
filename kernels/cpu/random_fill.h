// Normal initialisation on the CPU, drawn straight into a slice of a tensor: the values of the
// elements a slice holds in the draw of the whole tensor (Tensor::randn's), and no others.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/random.h"

namespace nd::cpu {

// out (slice.size()): out[j] = mean + std * philox_normal(seed, rng.start() + slice.full_index(j),
// stream), computed in double and rounded once to T, as Tensor::randn writes element
// full_index(j) of a draw whose first counter is rng.start().
template <typename T>
void normal_fill(T* out, const ElementSlice& slice, const PhiloxCounters& rng, double mean, double std);

}  // namespace nd::cpu
