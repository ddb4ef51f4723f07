// Many small device-to-device copies in a few launches: sequence parallelism packs the gradients of
// its replicated parameters (LayerNorms, row-parallel biases) into one buffer to sum them over the
// group and unpacks them after, where a launch per tensor would sit on the critical path.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>
#include <vector>

namespace nd::cuda {

struct ByteCopy {
  const void* src;
  void* dst;
  int64_t bytes;
};

// dst = src for every copy (no overlaps), queued on `stream` (the compute stream by default), in
// ceil(count / 128) launches whatever the sizes; the copy descriptors travel as kernel arguments,
// so no host-device transfer happens and a CUDA graph may capture it.
void copy_many(const std::vector<ByteCopy>& copies, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
