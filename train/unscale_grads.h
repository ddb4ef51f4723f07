// The loss scaler's unscale: the flat gradients (the loss scale times the true ones) multiplied by
// 1/scale before the norm and clipping. The factor is a one-element f32 tensor on the gradients'
// device, read when the work runs, so a captured step replays with each step's scale.
#pragma once
#include "tensor/tensor.h"

namespace nd::train {

// grads (n, f32, bf16 or f16) *= inverse_scale[0].
void unscale_grads(Tensor& grads, const Tensor& inverse_scale);

}  // namespace nd::train
