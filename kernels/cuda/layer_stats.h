// Per-layer statistics on the GPU (train/layer_stats.h): the four sums of tensor slots
// (kernels/layer_stats_slot.h) and the entropy of causal attention rows, added into doubles on
// the device with atomics, so a whole statistics step is a few launches and one read-back.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/cuda/multi_tensor.h"
#include "kernels/layer_stats_slot.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// For each slot (device-resident list): out[slot.out + k] += its sum k (TensorStat). One launch.
template <typename T>
void tensor_stats(const DeviceSlots<StatSlot<T>>& slots, double* out, cudaStream_t stream = nullptr);
// The same for one slot passed by value (a tensor whose address changes from call to call).
template <typename T>
void tensor_stats(const StatSlot<T>& slot, double* out, cudaStream_t stream = nullptr);

// As cpu::attention_entropy (kernels/cpu/layer_stats.h).
template <typename T>
void attention_entropy(const T* qkv, int64_t B, int64_t T_, int64_t C, int64_t NH, double* out,
                       cudaStream_t stream = nullptr);

}  // namespace nd::cuda
