// The dropout seed and offset of a cuDNN attention call, written into device memory by a kernel on
// the call's stream (cuDNN reads both from device tensors; a kernel argument, unlike a pageable
// copy, is allowed while the stream is captured into a CUDA graph).
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

namespace nd::cudnn {

// dst[0] = seed, dst[1] = offset.
void write_philox_seed_offset(int64_t* dst, int64_t seed, int64_t offset, cudaStream_t stream);

}  // namespace nd::cudnn
