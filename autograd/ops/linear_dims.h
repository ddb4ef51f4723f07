// The operand checks of a linear layer, shared by ops::linear and ops::gelu_mlp: shapes, dtype and
// device, with messages that name the op and the shapes.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace nd::ops {

struct LinearDims {
  int64_t M, N, K;  // rows (x's leading dimensions together), out features, in features
};

// x (..., K), w (N, K), b (N) or null, of one dtype on one device -> (M, N, K); else an nd::Error
// that starts with `op`.
LinearDims linear_dims(const char* op, const Tensor& x, const Tensor& w, const Tensor* b);

}  // namespace nd::ops
