// Global gradient norm on the GPU over a list of tensors, in two launches and no host
// synchronisation: per-block partial sums of squares (f32), then one block adds them in a fixed
// order in f64 and writes the norm and, for clipping, the scale AdamW applies to the gradients.
// Under tensor parallelism the sums of squares come out in two parts (the sharded tensors', to be
// all-reduced over the group, and the replicated ones'), and a third launch finishes the norm.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/cuda/multi_tensor.h"
#include "tensor/dtype.h"

namespace nd::cuda {

template <typename T>
struct NormSlot {
  const T* data;
  int64_t n;
};

// norm (1) = sqrt(sum over slots of sum x^2). When clip_scale is not null it gets
// min(1, max_norm / (norm + 1e-6)) (torch.nn.utils.clip_grad_norm_), or 1 when max_norm <= 0;
// NaN when the norm is not finite (adamw_update then leaves everything as it was).
template <typename T>
void global_norm(const DeviceSlots<NormSlot<T>>& slots, float* norm, float* clip_scale, float max_norm,
                 cudaStream_t stream = nullptr);

// sums (2) = the sums of squares of slots [0, split) and of slots [split, count), f32, each added
// in a fixed order in f64. 0 <= split <= count.
template <typename T>
void sums_of_squares(const DeviceSlots<NormSlot<T>>& slots, int split, float* sums, cudaStream_t stream = nullptr);

// norm (1) = sqrt(sums[0] + sums[1]) and clip_scale as global_norm writes them (one thread).
void norm_from_sums(const float* sums, float* norm, float* clip_scale, float max_norm, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
