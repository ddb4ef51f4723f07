// ops::cross_entropy: fused log-softmax + NLL over the valid vocabulary, mean over the targets
// that are not -1. The loss is a 0-d tensor (shape [], one element). Backward reads the logits
// from the input, the targets (shared, not copied: do not overwrite them before backward) and the
// per-row log-sum-exp (N) and the count of counted rows that the forward kernel wrote. A target
// outside the vocabulary is an nd::Error: at once on the CPU, at check_recorded_token_ids on the GPU.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
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

}  // namespace

Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t valid_vocab) {
  const Tensor& x = logits.data();
  const CrossEntropyDims d = cross_entropy_dims(x, targets, valid_vocab);
  Tensor loss = Tensor::empty({}, x.dtype(), x.device());
  // Saved for backward: (N) row log-sum-exp, then one element holding the count of counted rows.
  Tensor saved = Tensor::empty({d.N + 1}, stat_dtype(x.dtype()), x.device());
  ND_DISPATCH_KERNEL(x, "cross_entropy", {
    StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
    backend::cross_entropy_forward(x.data<scalar_t>(), targets.data<int32_t>(), loss.data<scalar_t>(), lse, lse + d.N,
                                   d.N, d.Vp, d.V);
  });
  return make_result(loss, {logits}, [targets, saved, d](const Tensor& grad_out, std::vector<Variable>& inputs) {
    const Tensor& x = inputs[0].data();
    const GradSlot dlogits = inputs[0].grad_slot();
    ND_DISPATCH_KERNEL(x, "cross_entropy backward", {
      const StatType<scalar_t>* lse = saved.data<StatType<scalar_t>>();
      backend::cross_entropy_backward(x.data<scalar_t>(), targets.data<int32_t>(), lse, lse + d.N,
                                      grad_out.data<scalar_t>(), grad_dest<scalar_t>(dlogits), d.N, d.Vp, d.V);
    });
  });
}

}  // namespace nd::ops
