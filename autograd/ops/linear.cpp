// ops::linear: x (..., K) · wᵀ (K, N) + b (N) -> (..., N). The leading dimensions of x are one
// batch of M rows; backward reads x and w from the inputs and needs nothing saved, so recorded
// without its forward (autograd/without_forward.h) the op runs no kernel at all.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/ops/linear_dims.h"
#include "autograd/weight_grad_queue.h"
#include "autograd/without_forward.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/linear.h"

namespace nd::ops {

LinearDims linear_dims(const char* op, const Tensor& x, const Tensor& w, const Tensor* b) {
  ND_CHECK(x.ndim() >= 1, op << ": x must have at least one dimension, got " << x.str());
  ND_CHECK(w.ndim() == 2, op << ": w must be (out_features, in_features), got " << w.str());
  ND_CHECK(x.size(-1) == w.size(1), op << ": x " << shape_str(x.shape()) << " has last dimension " << x.size(-1)
                                                 << " but w " << shape_str(w.shape()) << " has in_features "
                                                 << w.size(1));
  ND_CHECK(w.dtype() == x.dtype(), op << ": w " << w.str() << " and x " << x.str() << " differ in dtype");
  ND_CHECK(w.device() == x.device(), op << ": w " << w.str() << " and x " << x.str() << " are on different devices");
  if (b != nullptr) {
    ND_CHECK(b->ndim() == 1 && b->size(0) == w.size(0), op << ": b " << shape_str(b->shape()) << " does not match w "
                                                                     << shape_str(w.shape()) << ": expected ["
                                                                     << w.size(0) << "]");
    ND_CHECK(b->dtype() == x.dtype(), op << ": b " << b->str() << " and x " << x.str() << " differ in dtype");
    ND_CHECK(b->device() == x.device(),
             op << ": b " << b->str() << " and x " << x.str() << " are on different devices");
  }
  int64_t M = 1;
  for (int i = 0; i + 1 < x.ndim(); ++i) M *= x.size(i);
  return {M, w.size(0), w.size(1)};
}

Variable linear(const Variable& x, const Variable& w, const Variable& b) {
  const bool has_bias = b.defined();
  const Tensor& xd = x.data();
  const LinearDims d = linear_dims("linear", xd, w.data(), has_bias ? &b.data() : nullptr);
  Shape out_shape = xd.shape();
  out_shape.back() = d.N;
  const double flops = gemm_flops(d);
  // Without its forward (autograd/without_forward.h) the product is skipped: backward reads only x and w.
  const bool skipped = forward_skipped();
  Tensor out = skipped ? Tensor() : Tensor::empty(out_shape, xd.dtype(), xd.device());
  if (!skipped) {
    if (op_timer::enabled()) op_timer::note_next({flops, 0.0, gemm_label(d)});
    ND_DISPATCH_KERNEL(xd, "linear",
                       backend::linear_forward(xd.data<scalar_t>(), w.data().data<scalar_t>(),
                                               has_bias ? b.data().data<scalar_t>() : nullptr, out.data<scalar_t>(),
                                               d.M, d.N, d.K));
  }
  std::vector<Variable> inputs = {x, w};
  if (has_bias) inputs.push_back(b);
  auto backward = [d, flops](const Tensor& grad_out, std::vector<Variable>& in) {
    const Tensor& x = in[0].data();
    const Tensor& w = in[1].data();
    WeightGradientQueue* deferred = deferred_weight_gradients();
    if (deferred && (in[1].requires_grad() || (in.size() > 2 && in[2].requires_grad()))) {
      // Zero-bubble: dx now, dw and db when the queue runs (their slots taken then).
      const GradSlot dx = in[0].grad_slot();
      if (dx.wanted())
        ND_DISPATCH_KERNEL(x, "linear backward (input)",
                           backend::linear_backward(grad_out.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                                    grad_dest<scalar_t>(dx), GradDest<scalar_t>{}, GradDest<scalar_t>{},
                                                    d.M, d.N, d.K));
      deferred->push([d, dout = grad_out, x = x, w = w, wv = in[1], bv = in.size() > 2 ? in[2] : Variable()]() mutable {
        const GradSlot dw = wv.grad_slot(), db = bv.defined() ? bv.grad_slot() : GradSlot();
        ND_DISPATCH_KERNEL(x, "linear backward (weight)",
                           backend::linear_backward(dout.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                                    GradDest<scalar_t>{}, grad_dest<scalar_t>(dw),
                                                    grad_dest<scalar_t>(db), d.M, d.N, d.K));
      });
      return;
    }
    const GradSlot dx = in[0].grad_slot(), dw = in[1].grad_slot();
    const GradSlot db = in.size() > 2 ? in[2].grad_slot() : GradSlot();
    if (op_timer::enabled())  // one GEMM of the forward's size for dx, one for dw
      op_timer::note_next({flops * ((dx.wanted() ? 1 : 0) + (dw.wanted() ? 1 : 0)), 0.0,
                           gemm_label(d)});
    ND_DISPATCH_KERNEL(x, "linear backward",
                       backend::linear_backward(grad_out.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                                grad_dest<scalar_t>(dx), grad_dest<scalar_t>(dw),
                                                grad_dest<scalar_t>(db), d.M, d.N, d.K));
  };
  if (skipped) return make_result_without_value({out_shape, xd.dtype(), xd.device()}, std::move(inputs), backward);
  return make_result(out, std::move(inputs), backward);
}

}  // namespace nd::ops
