// The loss-gradient fusion's two checks on the announced seed (ops::LossGradient), shared by the
// plain and the vocabulary-parallel cross-entropy.
#pragma once
#include "autograd/ops.h"
#include "tensor/tensor.h"

namespace nd::ops {

// The seed must be a scalar of the loss's dtype (loss_dtype: f32 for bf16 and f16 logits too), on
// the logits' device; `op` names the loss in the error.
inline void check_loss_seed(const Tensor& seed, const Tensor& logits, const char* op) {
  ND_CHECK(seed.defined(), op << ": the LossGradient's seed is undefined");
  ND_CHECK(seed.shape() == Shape{}, op << ": the LossGradient's seed must be a scalar (shape []) like the loss, got "
                                       << seed.str());
  check_dtype(seed, loss_dtype(logits.dtype()), (std::string(op) + ": the LossGradient's seed").c_str());
  check_device(seed, logits.device(), (std::string(op) + ": the LossGradient's seed").c_str());
}

// The backward was seeded with the very tensor the forward scaled by (not a copy: the engine
// passes it itself, Node::only_reads_grad_out), so the written gradient is the gradient.
inline bool is_loss_seed(const Tensor& grad_out, const Tensor& seed) {
  return grad_out.shares_storage(seed) && grad_out.raw_data() == seed.raw_data();
}

}  // namespace nd::ops
