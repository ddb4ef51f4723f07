// ops::cross_entropy: fused log-softmax + NLL over the valid vocabulary, mean over the targets
// that are not -1. The loss is a 0-d tensor (shape [], one element) of loss_dtype: f32 for bf16 and
// f16 logits too, the kernel's f32 mean as it is, and so is its gradient (grad_out). Backward reads
// the logits from the input, the targets (shared, not copied: do not overwrite them before backward) and the
// per-row log-sum-exp (N) and the count of counted rows that the forward kernel wrote. A target
// outside the vocabulary is an nd::Error: at once on the CPU, at check_recorded_token_ids on the GPU.
// With a LossGradient (the loss-gradient fusion) the forward writes the logits' gradient too,
// and the backward hands it over when it is seeded with the announced tensor.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/loss_seed.h"
#include "autograd/parallel_ops.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cuda/cross_entropy.h"

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

// The backward from the logits and the forward's saved (N) row log-sum-exp and count: softmax
// minus the one-hot target, times grad_out / count, into the logits' gradient slot.
void backward_from_logits(const Tensor& grad_out, Variable& logits, const Tensor& targets, const Tensor& saved,
                          const CrossEntropyDims& d) {
  const Tensor& x = logits.data();
  const GradSlot dlogits = logits.grad_slot();
  ND_DISPATCH_KERNEL(x, "cross_entropy backward", {
    const StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
    backend::cross_entropy_backward(x.data<scalar_t>(), targets.data<int32_t>(), lse, lse + d.N,
                                    grad_out.data<StatType<scalar_t>>(), grad_dest<scalar_t>(dlogits), d.N, d.Vp,
                                    d.V);
  });
}

}  // namespace

Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t valid_vocab) {
  const Tensor& x = logits.data();
  const CrossEntropyDims d = cross_entropy_dims(x, targets, valid_vocab);
  Tensor loss = Tensor::empty({}, loss_dtype(x.dtype()), x.device());
  // Saved for backward: (N) row log-sum-exp, then one element holding the count of counted rows.
  Tensor saved = Tensor::empty({d.N + 1}, stat_dtype(x.dtype()), x.device());
  ND_DISPATCH_KERNEL(x, "cross_entropy", {
    StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
    backend::cross_entropy_forward(x.data<scalar_t>(), targets.data<int32_t>(), loss.data<StatType<scalar_t>>(), lse,
                                   lse + d.N, d.N, d.Vp, d.V);
  });
  return make_result(loss, {logits}, [targets, saved, d](const Tensor& grad_out, std::vector<Variable>& inputs) {
    backward_from_logits(grad_out, inputs[0], targets, saved, d);
  });
}

Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t valid_vocab,
                       const LossGradient& gradient) {
  const Tensor& x = logits.data();
  check_loss_seed(gradient.seed, x, "cross_entropy");
  if (!grad_enabled() || !logits.requires_grad())
    return cross_entropy(logits, targets, valid_vocab);
  const CrossEntropyDims d = cross_entropy_dims(x, targets, valid_vocab);
  const bool in_place = gradient.overwrite_logits;
  const Tensor seed = gradient.seed;
  Tensor dlogits = in_place ? x : Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor loss = Tensor::empty({}, loss_dtype(x.dtype()), x.device());
  Tensor saved = Tensor::empty({d.N + 1}, stat_dtype(x.dtype()), x.device());  // as cross_entropy's
  ND_DISPATCH_KERNEL(x, "cross_entropy with grad", {
    StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
    backend::cross_entropy_forward_with_grad(x.data<scalar_t>(), targets.data<int32_t>(),
                                             seed.data<StatType<scalar_t>>(), loss.data<StatType<scalar_t>>(), lse,
                                             lse + d.N, dlogits.data<scalar_t>(), d.N, d.Vp, d.V);
  });
  Variable result = make_result(loss, {logits}, [targets, saved, d, seed, dlogits, in_place](
                                                    const Tensor& grad_out, std::vector<Variable>& inputs) {
    if (is_loss_seed(grad_out, seed)) {
      pass_gradient(dlogits, inputs[0]);
      return;
    }
    if (in_place) {
      ND_DISPATCH_KERNEL(dlogits, "cross_entropy backward rescale",
                         backend::cross_entropy_rescale_grad(grad_out.data<StatType<scalar_t>>(),
                                                             seed.data<StatType<scalar_t>>(),
                                                             dlogits.data<scalar_t>(), dlogits.numel()));
      pass_gradient(dlogits, inputs[0]);
      return;
    }
    backward_from_logits(grad_out, inputs[0], targets, saved, d);  // intact: the gradient has its own buffer
  });
  result.grad_fn()->only_reads_grad_out = true;
  return result;
}

}  // namespace nd::ops
