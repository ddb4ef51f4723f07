// ops::linear_reduced_dx: ops::linear whose input gradient is summed over a group, the reduction
// overlapping the weight-gradient product (Megatron's column-parallel backward). The forward is
// ops::linear's; backward runs linear_backward twice, first for dx alone, then for dw and db.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "autograd/weight_grad_queue.h"
#include "kernels/cpu/linear.h"
#include "kernels/cuda/linear.h"

namespace nd::ops {

namespace {

// dx (M, K) = dout (M, N) · w (N, K), written (not added) into `dx`.
void input_gradient(const Tensor& dout, const Tensor& x, const Tensor& w, Tensor& dx, int64_t M, int64_t N,
                    int64_t K) {
  const GradSlot slot{dx, false};
  ND_DISPATCH_KERNEL(x, "linear backward",
                     backend::linear_backward(dout.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                              grad_dest<scalar_t>(slot), GradDest<scalar_t>{}, GradDest<scalar_t>{},
                                              M, N, K));
}

void weight_gradients(const Tensor& dout, const Tensor& x, const Tensor& w, const GradSlot& dw, const GradSlot& db,
                      int64_t M, int64_t N, int64_t K) {
  ND_DISPATCH_KERNEL(x, "linear backward",
                     backend::linear_backward(dout.data<scalar_t>(), x.data<scalar_t>(), w.data<scalar_t>(),
                                              GradDest<scalar_t>{}, grad_dest<scalar_t>(dw), grad_dest<scalar_t>(db),
                                              M, N, K));
}

}  // namespace

Variable linear_reduced_dx(const Variable& x, const Variable& w, const Variable& b, const StartReduce& start_reduce) {
  Tensor out;
  {
    NoGradGuard forward_only;  // ops::linear checks the shapes and runs the product
    out = linear(x, w, b).data();
  }
  const int64_t N = w.shape()[0], K = w.shape()[1];
  const int64_t M = K == 0 ? 0 : x.data().numel() / K;
  std::vector<Variable> inputs = {x, w};
  if (b.defined()) inputs.push_back(b);
  return make_result(out, std::move(inputs),
                     [M, N, K, start_reduce](const Tensor& grad_out, std::vector<Variable>& in) {
                       const Tensor& x = in[0].data();
                       const Tensor& w = in[1].data();
                       Tensor dx;
                       std::function<void()> wait;
                       if (in[0].requires_grad()) {
                         dx = Tensor::empty(x.shape(), x.dtype(), x.device());
                         input_gradient(grad_out, x, w, dx, M, N, K);
                         wait = start_reduce(dx);
                       }
                       if (WeightGradientQueue* deferred = deferred_weight_gradients()) {
                         // Zero-bubble: the weight and bias gradients when the queue runs.
                         deferred->push([=, dout = grad_out, x = x, w = w, wv = in[1],
                                         bv = in.size() > 2 ? in[2] : Variable()]() mutable {
                           const GradSlot dw = wv.grad_slot(), db = bv.defined() ? bv.grad_slot() : GradSlot();
                           if (dw.wanted() || db.wanted()) weight_gradients(dout, x, w, dw, db, M, N, K);
                         });
                       } else {
                         const GradSlot dw = in[1].grad_slot();
                         const GradSlot db = in.size() > 2 ? in[2].grad_slot() : GradSlot();
                         if (dw.wanted() || db.wanted()) weight_gradients(grad_out, x, w, dw, db, M, N, K);
                       }
                       if (!wait) return;
                       wait();
                       pass_gradient(dx, in[0]);
                     });
}

}  // namespace nd::ops
