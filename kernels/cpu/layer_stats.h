// CPU reference of the per-layer statistics (train/layer_stats.h): the four sums of a tensor slot
// (kernels/layer_stats_slot.h) and the entropy of causal attention rows, added into doubles.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/layer_stats_slot.h"

namespace nd::cpu {

// For each slot: out[slot.out + k] += its sum k (TensorStat), accumulated in double.
template <typename T>
void tensor_stats(const std::vector<StatSlot<T>>& slots, double* out);

// qkv (B, T, 3C) packed as attention_forward reads it (heads of size C / NH). out (NH):
// out[h] += sum over (b, t) of the entropy in nats of row t's attention probabilities
// softmax(q_t . k_j / sqrt(hs)), j <= t.
template <typename T>
void attention_entropy(const T* qkv, int64_t B, int64_t T_, int64_t C, int64_t NH, double* out);

}  // namespace nd::cpu
