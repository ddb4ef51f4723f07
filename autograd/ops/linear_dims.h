// The operand checks of a linear layer, shared by ops::linear and ops::gelu_mlp: shapes, dtype and
// device, with messages that name the op and the shapes.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace nd::ops {

struct LinearDims {
  int64_t M, N, K;  // rows (x's leading dimensions together), out features, in features
};

// x (..., K), w (N, K), b (N) or null, of one dtype on one device -> (M, N, K); else an nd::Error
// that starts with `op`.
LinearDims linear_dims(const char* op, const Tensor& x, const Tensor& w, const Tensor* b);

// The product's FLOPs, 2 M N K, and its op-timer label, "K->N".
inline double gemm_flops(const LinearDims& d) {
  return 2.0 * static_cast<double>(d.M) * static_cast<double>(d.N) * static_cast<double>(d.K);
}
inline std::string gemm_label(const LinearDims& d) { return std::to_string(d.K) + "->" + std::to_string(d.N); }

}  // namespace nd::ops
