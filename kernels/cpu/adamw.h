// CPU AdamW update with decoupled weight decay, in the same order of operations as
// torch.optim.AdamW, so that a run can be compared with PyTorch step by step.
#pragma once
#include <cstdint>

namespace nd::cpu {

// param, grad, m, v (n), updated in place for optimizer step `step` (1 for the first update):
//   param *= 1 - lr * weight_decay
//   g = grad * grad_scale                  (grad_scale carries gradient clipping; 1 when none)
//   m = m + (1 - beta1) (g - m)            (= beta1 m + (1 - beta1) g)
//   v = beta2 v + (1 - beta2) g^2
//   param -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
template <typename T>
void adamw_update(T* param, const T* grad, T* m, T* v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, int64_t step, float grad_scale);

}  // namespace nd::cpu
