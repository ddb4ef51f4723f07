// Fused AdamW on the GPU: one launch updates every parameter tensor. The optimizer state (f32
// master weights, m, v) stays f32; the model's copy (f32, bf16 or f16) is written from the master.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/adamw_hyper.h"
#include "kernels/cuda/multi_tensor.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// One parameter tensor (or a run of the flat buffers) of n elements. master may be null when T is
// float: the parameter itself is then the f32 master. The gradient is T, or f32 main gradients
// (G = float) beside bf16 or f16 parameters. weight_decay is per slot (GPT decays matrices, not
// biases or norms).
template <typename T, typename G = T>
struct AdamWSlot {
  T* param;
  const G* grad;
  float* master;
  float* m;
  float* v;
  int64_t n;
  float weight_decay;
};

// What changes every step, read by the kernel from device memory so that a captured CUDA graph
// replays with each step's values (a graph bakes by-value kernel arguments): the learning rate
// and the bias corrections 1 - beta1^step and sqrt(1 - beta2^step).
struct AdamWStepScalars {
  float lr, bias1, sqrt_bias2;
};

// The step scalars in the precision the by-value path always used (powers in double, then f32).
// nd::Error when step < 1 or a beta lies outside [0, 1).
AdamWStepScalars adamw_step_scalars(float lr, float beta1, float beta2, int64_t step);

// For every slot, in the order of operations of nd::cpu::adamw_update (torch.optim.AdamW):
//   w *= 1 - lr wd; g = grad * grad_scale; m += (1 - b1)(g - m); v = b2 v + (1 - b2) g^2;
//   w -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps); param = w.
// grad_scale (1) lives on the device (e.g. from global_norm's clip scale); null means 1. A
// non-finite grad_scale (global_norm's answer to a non-finite norm) leaves every slot untouched.
// The weight decay is each slot's (hyper.weight_decay is not read). This overload uploads the
// step scalars itself (not capturable).
template <typename T, typename G = T>
void adamw_update(const DeviceSlots<AdamWSlot<T, G>>& slots, const AdamWHyper& hyper, const float* grad_scale,
                  cudaStream_t stream = nullptr);

// The same update with lr and the bias corrections read from `step_scalars` (device memory, one
// AdamWStepScalars); beta1, beta2 and eps are fixed for a run. Launches one kernel and nothing
// else, so it can be captured into a CUDA graph.
template <typename T, typename G = T>
void adamw_update(const DeviceSlots<AdamWSlot<T, G>>& slots, float beta1, float beta2, float eps,
                  const AdamWStepScalars* step_scalars, const float* grad_scale, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
