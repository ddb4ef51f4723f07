// Normal initialisation on the GPU, drawn straight into a slice of a device tensor: the values of
// the elements a slice holds in the draw of the whole tensor, with no host staging. The CUDA
// logf/cosf may differ from the CPU's in the last bit, so a draw equals the CPU draw to within
// float rounding, and equals itself, sliced, bit for bit.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"
#include "tensor/random.h"

namespace nd::cuda {

// As cpu::normal_fill (kernels/cpu/random_fill.h), T = float, bf16 or f16. rng.offset, when set,
// is device memory.
template <typename T>
void normal_fill(T* out, const ElementSlice& slice, const PhiloxCounters& rng, double mean, double std,
                 cudaStream_t stream = nullptr);

}  // namespace nd::cuda
