// The dropout seed and offset of a cuDNN attention call, written into device memory by a kernel on
// the call's stream (cuDNN reads both from device tensors; a kernel argument, unlike a pageable
// copy, is allowed while the stream is captured into a CUDA graph).
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

namespace nd::cudnn {

// dst[0] = seed, dst[1] = first + *anchor (anchor: the step's first Philox counter in device memory,
// read when the kernel runs, so a replayed CUDA graph draws new masks; null: first alone).
void write_philox_seed_offset(int64_t* dst, int64_t seed, const uint64_t* anchor, int64_t first,
                              cudaStream_t stream);

}  // namespace nd::cudnn
