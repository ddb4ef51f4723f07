// Fused AdamW on the GPU: one launch updates every parameter tensor. The optimizer state (f32
// master weights, m, v) stays f32; the model's copy (f32 or bf16) is written from the master.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/cuda/multi_tensor.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// One parameter tensor of n elements. master may be null when T is float: the parameter itself is
// then the f32 master. weight_decay is per tensor (GPT decays matrices, not biases or norms).
template <typename T>
struct AdamWSlot {
  T* param;
  const T* grad;
  float* master;
  float* m;
  float* v;
  int64_t n;
  float weight_decay;
};

struct AdamWHyper {
  float lr, beta1, beta2, eps;
  int64_t step;  // 1 for the first update
};

// For every slot, in the order of operations of nd::cpu::adamw_update (torch.optim.AdamW):
//   w *= 1 - lr wd; g = grad * grad_scale; m += (1 - b1)(g - m); v = b2 v + (1 - b2) g^2;
//   w -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps); param = w.
// grad_scale (1) lives on the device (e.g. from global_norm's clip scale); null means 1.
template <typename T>
void adamw_update(const DeviceSlots<AdamWSlot<T>>& slots, const AdamWHyper& hyper, const float* grad_scale,
                  cudaStream_t stream = nullptr);

}  // namespace nd::cuda
