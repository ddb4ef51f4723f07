// ops::cross_entropy: fused log-softmax + NLL over the valid vocabulary, mean over the targets
// that are not -1. The loss is a 0-d tensor (shape [], one element). Backward reads the logits
// from the input, the targets (shared, not copied: do not overwrite them before backward) and the
// per-row log-sum-exp (N) that the forward kernel wrote.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/dispatch.h"

namespace nd::ops {

namespace {

struct CrossEntropyDims {
  int64_t N, Vp, V;
};

CrossEntropyDims cross_entropy_dims(const Tensor& logits, const Tensor& targets, int64_t valid_vocab) {
  ND_CHECK(logits.ndim() >= 1, "cross_entropy: logits must be (B, T, Vp), got " << logits.str());
  ND_CHECK(targets.defined(), "cross_entropy: targets are undefined");
  check_dtype(targets, DType::I32, "cross_entropy: targets");
  check_device(targets, logits.device(), "cross_entropy: targets");
  const Shape& ls = logits.shape();
  const Shape row_shape(ls.begin(), ls.end() - 1);
  ND_CHECK(targets.shape() == row_shape, "cross_entropy: targets " << shape_str(targets.shape())
                                                                   << " do not match logits " << shape_str(ls)
                                                                   << " (expected " << shape_str(row_shape) << ")");
  const int64_t Vp = ls.back();
  const int64_t V = valid_vocab == 0 ? Vp : valid_vocab;
  ND_CHECK(V >= 1 && V <= Vp, "cross_entropy: valid_vocab " << valid_vocab << " must be in [1, " << Vp
                                                             << "] for logits " << shape_str(ls));
  return {targets.numel(), Vp, V};
}

// Forward on the logits' device: writes the loss (shape []) and returns the row log-sum-exp (N).
Tensor cross_entropy_forward_on_device(const Tensor& logits, const Tensor& targets, Tensor& loss,
                                       const CrossEntropyDims& d) {
  if (logits.device().is_cuda()) {
    // f32 on the GPU: (N) row log-sum-exp, then one element holding the count of counted rows.
    Tensor saved = Tensor::empty({d.N + 1}, DType::F32, logits.device());
    float* lse = saved.data<float>();
    ND_DISPATCH_CUDA_FLOAT(logits.dtype(), "cross_entropy",
                           cuda::cross_entropy_forward(logits.data<scalar_t>(), targets.data<int32_t>(),
                                                       loss.data<scalar_t>(), lse, lse + d.N, d.N, d.Vp, d.V));
    return saved;
  }
  Tensor row_lse = Tensor::empty({d.N}, logits.dtype(), logits.device());
  ND_DISPATCH_CPU_FLOAT(logits.dtype(), "cross_entropy",
                        cpu::cross_entropy_forward(logits.data<scalar_t>(), targets.data<int32_t>(),
                                                   loss.data<scalar_t>(), row_lse.data<scalar_t>(), d.N, d.Vp, d.V));
  return row_lse;
}

// Backward on the logits' device: dlogits += (softmax - onehot) * dloss / count (on the GPU with
// accumulate = false: dlogits = ..., for a buffer that holds no gradient yet).
void cross_entropy_backward_on_device(const Tensor& dloss, const Tensor& logits, const Tensor& targets,
                                      const Tensor& row_lse, Tensor& dlogits, bool accumulate,
                                      const CrossEntropyDims& d) {
  if (logits.device().is_cuda()) {
    const float* lse = row_lse.data<float>();
    ND_DISPATCH_CUDA_FLOAT(logits.dtype(), "cross_entropy backward",
                           cuda::cross_entropy_backward(logits.data<scalar_t>(), targets.data<int32_t>(), lse,
                                                        lse + d.N, dloss.data<scalar_t>(), dlogits.data<scalar_t>(),
                                                        d.N, d.Vp, d.V, accumulate));
    return;
  }
  ND_DISPATCH_CPU_FLOAT(logits.dtype(), "cross_entropy backward",
                        cpu::cross_entropy_backward(logits.data<scalar_t>(), targets.data<int32_t>(),
                                                    row_lse.data<scalar_t>(), dloss.data<scalar_t>(),
                                                    dlogits.data<scalar_t>(), d.N, d.Vp, d.V));
}

}  // namespace

Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t valid_vocab) {
  const Tensor& x = logits.data();
  const CrossEntropyDims d = cross_entropy_dims(x, targets, valid_vocab);
  Tensor loss = Tensor::empty({}, x.dtype(), x.device());
  Tensor row_lse = cross_entropy_forward_on_device(x, targets, loss, d);
  return make_result(loss, {logits}, [targets, row_lse, d](const Tensor& grad_out, std::vector<Variable>& inputs) {
    if (!inputs[0].requires_grad()) return;
    Variable& in = inputs[0];
    // On the GPU a first gradient is written, not added: no zero-filled (N, Vp) buffer beforehand.
    const bool fresh = in.device().is_cuda() && !in.has_grad();
    if (fresh) in.impl()->grad = Tensor::empty(in.shape(), in.dtype(), in.device());
    cross_entropy_backward_on_device(grad_out, in.data(), targets, row_lse, in.grad_buffer(), !fresh, d);
  });
}

}  // namespace nd::ops
