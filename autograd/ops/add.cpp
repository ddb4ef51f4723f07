// ops::add: a + b of one shape (the residual connection). Backward passes the gradient through
// to both inputs unchanged, so neither the closure nor the node keeps a value. A first input that
// is an op output with no gradient yet takes the gradient buffer itself (the residual stream), so
// only b's copy is written.
#include "autograd/dispatch.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "autograd/without_forward.h"
#include "kernels/cpu/add.h"
#include "kernels/cuda/add.h"

namespace nd::ops {

namespace {

// a's gradient can be grad_out's buffer: a is not a leaf (whose buffer may be a DDP bucket view)
// and holds no gradient yet, and grad_out is dropped once this node ran.
bool takes_buffer(const Variable& a) { return a.requires_grad() && !a.is_leaf() && !a.has_grad(); }

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  ND_CHECK(a.shape() == b.shape(),
           "add: shapes " << shape_str(a.shape()) << " and " << shape_str(b.shape()) << " differ");
  ND_CHECK(a.dtype() == b.dtype(), "add: a " << a.data().str() << " and b " << b.data().str() << " differ in dtype");
  ND_CHECK(a.device() == b.device(),
           "add: a " << a.data().str() << " and b " << b.data().str() << " are on different devices");
  auto backward = [](const Tensor& grad_out, std::vector<Variable>& in) {
    // Slots taken in order: for a + a the second one adds to what the first wrote (or took).
    const bool pass_a = takes_buffer(in[0]);
    if (pass_a) pass_gradient(grad_out, in[0]);
    const GradSlot da = pass_a ? GradSlot() : in[0].grad_slot();
    const GradSlot db = in[1].grad_slot();
    if (!da.wanted() && !db.wanted()) return;
    ND_DISPATCH_KERNEL(grad_out, "add backward",
                       backend::add_backward(grad_out.data<scalar_t>(), grad_dest<scalar_t>(da),
                                             grad_dest<scalar_t>(db), grad_out.numel()));
  };
  // Without its forward (autograd/without_forward.h) no sum is written: backward reads neither input.
  if (forward_skipped())
    return make_result_without_value({a.shape(), a.dtype(), a.device()}, {a.without_data(), b.without_data()},
                                     backward);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  ND_DISPATCH_KERNEL(out, "add",
                     backend::add_forward(a.data().data<scalar_t>(), b.data().data<scalar_t>(),
                                          out.data<scalar_t>(), out.numel()));
  return make_result(out, {a.without_data(), b.without_data()}, backward);
}

}  // namespace nd::ops
